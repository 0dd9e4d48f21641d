"""`rollout export` (stream rollouts as training data to a file) and `rollout import` (a JSONL as a new run)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

from .._core import EXPORT_FILTERS, EXPORT_FORMATS, filters
from .common import JsonOption, State, command, console, err_console, fail, print_json
from .scoring import print_metrics


def export(
    format: Annotated[str, typer.Argument(help=f"One of: {', '.join(EXPORT_FORMATS)}.")] = "rollout",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="File to write (default: stdout).")] = None,
    run: Annotated[list[str] | None, typer.Option(help="Run number or id (repeat for several).")] = None,
    dataset: Annotated[str | None, typer.Option(help="Dataset name or id.")] = None,
    split: Annotated[str | None, typer.Option(help="Task split.")] = None,
    status: Annotated[list[str] | None, typer.Option(help="Rollout status (repeat for several).")] = None,
    reward_min: Annotated[float | None, typer.Option(help="Lowest reward.")] = None,
    reward_max: Annotated[float | None, typer.Option(help="Highest reward.")] = None,
    tag: Annotated[list[str] | None, typer.Option(help="Runs carrying this tag (repeatable).")] = None,
    step: Annotated[int | None, typer.Option(help="Training step.")] = None,
    limit: Annotated[int | None, typer.Option(help="At most this many rollouts.")] = None,
    parquet: Annotated[bool, typer.Option("--parquet", help="Parquet instead of JSONL.")] = False,
) -> None:
    """Stream rollouts as training data (JSONL, one line per rollout, pair or group) to a file or stdout."""
    with_errors = command(_export)
    with_errors(format, output, run, dataset, split, status, reward_min, reward_max, tag, step, limit, parquet)


def _export(
    format: str,
    output: Path | None,
    run: list[str] | None,
    dataset: str | None,
    split: str | None,
    status: list[str] | None,
    reward_min: float | None,
    reward_max: float | None,
    tag: list[str] | None,
    step: int | None,
    limit: int | None,
    parquet: bool,
) -> None:
    if format not in EXPORT_FORMATS:
        raise fail(f"unknown format {format!r}; use one of {', '.join(EXPORT_FORMATS)}", 2)
    if parquet and output is None:
        raise fail("Parquet is binary: give a file with --output", 2)
    params = filters(
        EXPORT_FILTERS,
        {
            "run": run,
            "dataset": dataset,
            "split": split,
            "status": status,
            "reward_min": reward_min,
            "reward_max": reward_max,
            "tag": tag,
            "step": step,
            "limit": limit,
        },
    )
    if parquet:
        params["file_format"] = "parquet"
    client = State.client()
    sink = open(output, "wb") if output is not None else sys.stdout.buffer  # noqa: SIM115
    lines = 0
    try:
        with (
            client._t.stream("GET", f"/exports/{format}", params=params) as response,
            Progress(
                TextColumn("exporting"),
                DownloadColumn(),
                TransferSpeedColumn(),
                TextColumn("{task.description}"),
                console=err_console,
                disable=output is None,
                transient=True,
            ) as progress,
        ):
            bar = progress.add_task("", total=None)
            for chunk in response.iter_bytes():
                sink.write(chunk)
                lines += chunk.count(b"\n")
                progress.update(bar, advance=len(chunk), description=f"{lines:,} lines")
    finally:
        if output is not None:
            sink.close()
        else:
            sink.flush()
    if output is not None:
        what = "Parquet file" if parquet else f"{lines:,} line(s)"
        err_console.print(f"Exported {what} in format {format} to {output}.")


def import_(
    source: Annotated[Path, typer.Argument(help="JSONL file to import.", exists=True, dir_okay=False)],
    format: Annotated[str, typer.Option("--format", help="rollout (native export lines) or nemo-gym.")] = "rollout",
    dataset: Annotated[str | None, typer.Option(help="Dataset for the tasks (default: the export's).")] = None,
    workflow: Annotated[str | None, typer.Option(help="Workflow name of the new run.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Import a JSONL of rollouts (with traces, scores and tasks) as a new run."""
    with_errors = command(_import)
    with_errors(source, format, dataset, workflow, as_json)


def _import(source: Path, format: str, dataset: str | None, workflow: str | None, as_json: bool) -> None:
    client = State.client()
    size = source.stat().st_size
    with Progress(
        TextColumn("uploading"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        console=err_console,
        disable=as_json,
        transient=True,
    ) as progress:
        bar = progress.add_task("", total=size)

        def chunks() -> object:
            with open(source, "rb") as handle:
                for chunk in iter(lambda: handle.read(1 << 20), b""):
                    progress.advance(bar, len(chunk))
                    yield chunk

        result = client._t.request(
            "POST",
            "/imports",
            params={"format": format, "dataset": dataset, "workflow_name": workflow},
            content=chunks(),
            headers={"Content-Type": "application/x-ndjson"},
            max_retries=0,
        )
    if as_json:
        print_json(result)
        return
    run = result["run"]
    console.print(
        f"Imported {result['rollouts']} rollout(s), {result['events']} event(s), {result['scores']} "
        f"score(s) as run {run['number']} ({run['id']})."
    )
    if result.get("metrics"):
        print_metrics(result["metrics"])
