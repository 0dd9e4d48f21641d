"""`rollout scorers ...`, `rollout score RUN`, `rollout advantages RUN`, `rollout discard ROLLOUT` and
`rollout metrics RUN`: the scoring endpoints, with the run's metrics printed the way NeMo Gym prints them
after a collection."""

from __future__ import annotations

import json
import time
from enum import Enum
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from .._client import Client
from .._core import split_ref
from .common import FAILED, USAGE, JsonOption, State, command, console, err_console, fail, print_json, short, when

scorers_app = typer.Typer(
    help="Scorers: what scores a dataset's or a run's rollouts when they finish.", no_args_is_help=True
)


class Normalization(str, Enum):  # noqa: UP042 - StrEnum is Python 3.11+
    grpo = "grpo"
    dr_grpo = "dr_grpo"
    batch = "batch"


class GroupBy(str, Enum):  # noqa: UP042 - StrEnum is Python 3.11+
    auto = "auto"
    task = "task"
    group_key = "group_key"


class Finished(str, Enum):  # noqa: UP042 - StrEnum is Python 3.11+
    succeeded = "succeeded"
    failed = "failed"
    errored = "errored"
    cancelled = "cancelled"


class Discardable(str, Enum):  # noqa: UP042 - StrEnum is Python 3.11+
    failed = "failed"
    errored = "errored"
    cancelled = "cancelled"


# -- the metrics table ----------------------------------------------------------------------------------------


def _number(value: float) -> str:
    return f"{value:.4f}"


def metrics_table(metrics: dict[str, Any]) -> Table:
    """name, count, mean, std, min, max: every numeric score, the reward (when no score carries its name)
    and the advantage."""
    table = Table(box=None, header_style="bold", pad_edge=False)
    table.add_column("name")
    for column in ("count", "mean", "std", "min", "max"):
        table.add_column(column, justify="right")
    reward_name = metrics.get("reward_score") or "reward"
    rows: list[tuple[str, dict[str, Any]]] = sorted((metrics.get("scores") or {}).items())
    if metrics.get("reward") and reward_name not in dict(rows):
        rows.insert(0, ("reward", metrics["reward"]))
    if metrics.get("advantage"):
        rows.append(("advantage", metrics["advantage"]))
    for name, stat in rows:
        label = f"{name} (reward)" if name == reward_name else name
        table.add_row(
            label,
            str(stat["count"]),
            _number(stat["mean"]),
            _number(stat["std"]),
            _number(stat["min"]),
            _number(stat["max"]),
        )
    return table


def print_metrics(metrics: dict[str, Any]) -> None:
    """The run's metrics table, with a pointer to `rollout score errors` when a scorer failed."""
    run = metrics.get("run_number")
    count, discarded = metrics.get("rollout_count", 0), metrics.get("discarded_count", 0)
    header = f"Run {run}: {count} rollout(s)" + (f", {discarded} discarded" if discarded else "")
    console.print(header, style="bold")
    if metrics.get("scores") or metrics.get("reward") or metrics.get("advantage"):
        console.print(metrics_table(metrics))
    else:
        console.print("No numeric scores yet.", style="dim")
    errors = metrics.get("errors") or {}
    if errors:
        listed = ", ".join(f"{name} {count}" for name, count in sorted(errors.items()))
        console.print(f"[red]Scorer errors:[/] {listed}. See `rollout score errors {run}`.")


def fetch_metrics(client: Client, run: str, *, include_discarded: bool = True) -> dict[str, Any]:
    path = f"/runs/{run}/metrics"
    params = {"include_discarded": "true" if include_discarded else "false"}
    return client._t.request("GET", path, params=params)  # type: ignore[no-any-return]


# -- scorers ----------------------------------------------------------------------------------------------------


def _target(dataset: str | None, run: str | None, *, required: bool) -> dict[str, str]:
    if dataset is not None and run is not None:
        raise fail("give one of --dataset or --run, not both", USAGE)
    if required and dataset is None and run is None:
        raise fail("give --dataset NAME (every run of it) or --run N (that run only)", USAGE)
    return {"dataset": dataset} if dataset is not None else {"run": run} if run is not None else {}


def _json_value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text  # a bare word is a string: --set value=Paris


def build_config(config: str | None, settings: list[str]) -> dict[str, Any]:
    """--config '{json}' first, then each --set key=value on top (dotted keys nest: --set a.b=1)."""
    out: dict[str, Any] = {}
    if config is not None:
        try:
            parsed = json.loads(config)
        except ValueError as error:
            raise fail(f"--config is not valid JSON: {error}", USAGE) from None
        if not isinstance(parsed, dict):
            raise fail('--config must be a JSON object, e.g. \'{"value": "Paris"}\'', USAGE)
        out.update(parsed)
    for setting in settings:
        key, sep, value = setting.partition("=")
        if not sep or not key:
            raise fail(f"--set takes key=value, not {setting!r}", USAGE)
        parts = key.split(".")
        target = out
        for part in parts[:-1]:
            nested = target.setdefault(part, {})
            if not isinstance(nested, dict):
                raise fail(f"--set {key}: {part} is already set to a non-object value", USAGE)
            target = nested
        target[parts[-1]] = _json_value(value)
    return out


def _scorers_table(scorers: list[dict[str, Any]]) -> Table:
    table = Table(box=None, header_style="bold", pad_edge=False)
    for column in ("id", "name", "type", "on", "enabled", "config", "updated"):
        table.add_column(column)
    for scorer in scorers:
        target = f"run {scorer['run_id']}" if scorer.get("run_id") else f"dataset {scorer.get('dataset_id')}"
        table.add_row(
            scorer["id"],
            scorer["name"],
            scorer["type"],
            target,
            "yes" if scorer["enabled"] else "no",
            short(scorer.get("config") or {}, 60),
            when(_parse_time(scorer.get("updated_at"))),
        )
    return table


def _parse_time(value: Any) -> Any:
    from datetime import datetime

    try:
        return datetime.fromisoformat(str(value))
    except ValueError:
        return value


@scorers_app.command("add")
@command
def scorers_add(
    name: Annotated[str, typer.Argument(help="The scorer's name: source (and default name) of its scores.")],
    type_: Annotated[str, typer.Argument(metavar="TYPE", help="A type from `rollout scorers types`.")],
    dataset: Annotated[str | None, typer.Option(help="Score every run of this dataset (name or id).")] = None,
    run: Annotated[str | None, typer.Option(help="Score this run only (number or id).")] = None,
    config: Annotated[str | None, typer.Option(help="The scorer's configuration as a JSON object.")] = None,
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="One config key=value (JSON or text; repeatable).")
    ] = None,
    disabled: Annotated[bool, typer.Option("--disabled", help="Save it switched off.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Attach a scorer to a dataset or a run (a scorer of the same name there is replaced)."""
    body = {
        **_target(dataset, run, required=True),
        "name": name,
        "type": type_,
        "config": build_config(config, set_ or []),
        "enabled": not disabled,
    }
    scorer = State.client()._t.request("POST", "/scorers", json=body)
    if as_json:
        print_json(scorer)
        return
    verb = "Replaced" if scorer["created_at"] != scorer["updated_at"] else "Added"
    where = f"run {run}" if run is not None else f"dataset {dataset}"
    state = "" if scorer["enabled"] else " (disabled)"
    console.print(f"{verb} scorer [bold]{scorer['name']}[/] ({scorer['type']}) on {where}{state}: {scorer['id']}")


@scorers_app.command("list")
@command
def scorers_list(
    dataset: Annotated[str | None, typer.Option(help="Scorers of this dataset.")] = None,
    run: Annotated[str | None, typer.Option(help="Scorers that apply to this run (its own and its dataset's).")] = None,
    as_json: JsonOption = False,
) -> None:
    """List scorers: of a dataset, of a run, or (with neither) of the whole workspace."""
    page = State.client()._t.request("GET", "/scorers", params=_target(dataset, run, required=False))
    scorers = page.get("items", [])
    if as_json:
        print_json(scorers)
    elif not scorers:
        console.print("No scorers.")
    else:
        console.print(_scorers_table(scorers))


@scorers_app.command("rm")
@command
def scorers_rm(
    scorer_id: Annotated[str, typer.Argument(metavar="ID", help="The scorer's id (scorer_…), from `scorers list`.")],
    as_json: JsonOption = False,
) -> None:
    """Remove a scorer; the scores it wrote stay."""
    State.client()._t.request("DELETE", f"/scorers/{scorer_id}")
    if as_json:
        print_json({"removed": scorer_id})
    else:
        console.print(f"Removed scorer {scorer_id}.")


@scorers_app.command("types")
@command
def scorers_types(as_json: JsonOption = False) -> None:
    """Scorer types the server can run: built-ins and installed Python scorers."""
    types = State.client()._t.request("GET", "/scorers/types")
    if as_json:
        print_json(types)
        return
    table = Table(box=None, header_style="bold", pad_edge=False)
    table.add_column("type")
    table.add_column("source")
    for item in types:
        table.add_row(item["type"], item["source"])
    console.print(table)


# -- scoring a run ----------------------------------------------------------------------------------------------


def parse_inline(spec: str) -> dict[str, Any]:
    """'name:type' or 'name:type:{json config}'."""
    name, _, rest = spec.partition(":")
    type_, _, config = rest.partition(":")
    if not name or not type_:
        raise fail(f"--inline takes name:type or name:type:{{json}}, not {spec!r}", USAGE)
    return {"name": name, "type": type_, "config": build_config(config or None, [])}


def score(
    target: Annotated[str, typer.Argument(metavar="RUN", help="Run number or id (or `errors RUN`).")],
    errors_of: Annotated[
        str | None, typer.Argument(metavar="[RUN]", help="With `errors`: the run.", show_default=False)
    ] = None,
    scorer: Annotated[
        list[str] | None, typer.Option(help="A configured scorer to run (repeatable; default: all).")
    ] = None,
    inline: Annotated[
        list[str] | None, typer.Option(help="An ad-hoc scorer, not saved: 'name:type:{json}' (repeatable).")
    ] = None,
    rollout: Annotated[list[str] | None, typer.Option(help="Only this rollout id (repeatable).")] = None,
    status: Annotated[list[Finished] | None, typer.Option(help="Only rollouts with this status (repeatable).")] = None,
    no_wait: Annotated[bool, typer.Option("--no-wait", help="Queue the jobs and return at once.")] = False,
    interval: Annotated[float, typer.Option(help="Seconds between progress polls.")] = 0.5,
    timeout: Annotated[float | None, typer.Option(help="Stop waiting after this many seconds.")] = None,
    limit: Annotated[int, typer.Option(help="With `errors`: at most this many.")] = 100,
    as_json: JsonOption = False,
) -> None:
    """Score a run's finished rollouts: queue the jobs, follow them with a progress bar, print the run's
    metrics. Exits 1 when a scorer failed; `rollout score errors RUN` lists what failed."""
    with_errors = command(_score)
    with_errors(target, errors_of, scorer, inline, rollout, status, no_wait, interval, timeout, limit, as_json)


def _score(
    target: str,
    errors_of: str | None,
    scorers: list[str] | None,
    inline: list[str] | None,
    rollouts: list[str] | None,
    statuses: list[Finished] | None,
    no_wait: bool,
    interval: float,
    timeout: float | None,
    limit: int,
    as_json: bool,
) -> None:
    if target == "errors":
        if errors_of is None:
            raise fail("which run? `rollout score errors RUN`", USAGE)
        _errors(errors_of, limit, as_json)
        return
    if errors_of is not None:
        raise fail(f"unexpected argument {errors_of!r}; score one run at a time", USAGE)
    run = target
    body: dict[str, Any] = {"inline": [parse_inline(spec) for spec in inline or []]}
    if scorers:
        body["scorers"] = scorers
    if rollouts:
        body["rollouts"] = rollouts
    if statuses:
        body["statuses"] = [status.value for status in statuses]
    client = State.client()
    queued = client._t.request("POST", f"/runs/{run}/score", json=body)
    if no_wait:
        if as_json:
            print_json(queued)
        else:
            console.print(
                f"Queued {queued['enqueued']} scoring job(s) for run {queued['run_number']}. Follow with "
                f"`rollout metrics {queued['run_number']}`."
            )
        return
    final = _follow(client, run, queued, interval, timeout, quiet=as_json)
    metrics = fetch_metrics(client, run)
    if as_json:
        print_json({"scoring": final, "enqueued": queued["enqueued"], "metrics": metrics})
    else:
        left = final["queued"] + final["running"]
        if left:
            console.print(f"Scoring run {queued['run_number']}: {left} job(s) still queued or running.")
        else:
            console.print(f"Scored {queued['enqueued']} rollout(s) of run {queued['run_number']}.")
        print_metrics(metrics)
    if final["queued"] or final["running"]:
        raise fail(
            f"scoring is still running after {timeout:g} s ({final['queued'] + final['running']} job(s) left)",
            FAILED,
            f"Check later with `rollout metrics {queued['run_number']}`.",
        )
    if final["errors"]:
        raise typer.Exit(FAILED)


def _follow(
    client: Client, run: str, status: dict[str, Any], interval: float, timeout: float | None, *, quiet: bool
) -> dict[str, Any]:
    """Poll GET /runs/{run}/scoring until no job is queued or running (or `timeout` passes)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    with Progress(
        TextColumn("scoring"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("jobs"),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=err_console,
        disable=quiet,
        transient=True,
    ) as progress:
        bar = progress.add_task("", total=status["total"] or None)
        while True:
            left = status["queued"] + status["running"]
            note = f"[red]{status['errors']} error(s)[/]" if status["errors"] else ""
            progress.update(bar, total=status["total"], completed=status["done"] + status["failed"], description=note)
            if not left or (deadline is not None and time.monotonic() >= deadline):
                return status
            time.sleep(interval)
            status = client._t.request("GET", f"/runs/{run}/scoring")


def _errors(run: str, limit: int, as_json: bool) -> None:
    client = State.client()
    errors = list(client._t.paginate(f"/runs/{run}/scorer-errors", limit=limit))
    if as_json:
        print_json(errors)
        return
    if not errors:
        console.print(f"No scorer errors in run {run}.")
        return
    table = Table(box=None, header_style="bold", pad_edge=False)
    for column in ("attempt", "scorer", "error", "detail", "rollout"):
        table.add_column(column)
    for error in errors:
        table.add_row(
            str(error["attempt"]),
            error["scorer"],
            short(error["message"], 90),
            error.get("detail") or "",
            error["rollout_id"],
        )
    console.print(table)


# -- advantages, discards, metrics ------------------------------------------------------------------------------


@command
def advantages(
    run: Annotated[str, typer.Argument(help="Run number or id.")],
    normalization: Annotated[
        Normalization,
        typer.Option(help="grpo: (r-mean)/(std+eps); dr_grpo: r-mean; batch: (r-mean)/(batch std+eps)."),
    ] = Normalization.grpo,
    group_by: Annotated[GroupBy, typer.Option(help="auto: the group key when set, else the task.")] = GroupBy.auto,
    epsilon: Annotated[float, typer.Option(help="Added to the std.")] = 1e-6,
    std_ddof: Annotated[int, typer.Option(min=0, max=1, help="1: sample std (torch, TRL); 0: population.")] = 1,
    keep_zero_variance: Annotated[
        bool, typer.Option("--keep-zero-variance", help="Do not discard groups whose rewards are all equal.")
    ] = False,
    discard_status: Annotated[
        list[Discardable] | None,
        typer.Option(help="Discard rollouts with this status (repeatable; default: errored)."),
    ] = None,
    discard_unscored: Annotated[
        bool, typer.Option("--discard-unscored", help="Discard rollouts without a reward.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Compute GRPO-style advantages per group and discard zero-variance groups and errored rollouts."""
    body: dict[str, Any] = {
        "normalization": normalization.value,
        "group_by": group_by.value,
        "epsilon": epsilon,
        "std_ddof": std_ddof,
        "discard_zero_variance": not keep_zero_variance,
        "discard_unscored": discard_unscored,
    }
    if discard_status:
        body["discard_statuses"] = [status.value for status in discard_status]
    client = State.client()
    result = client._t.request("POST", f"/runs/{run}/advantages", json=body)
    if as_json:
        print_json(result)
        return
    discarded = {
        "zero variance": result["discarded_zero_variance"],
        "errored": result["discarded_errored"],
        "unscored": result["discarded_unscored"],
    }
    dropped = ", ".join(f"{count} {why}" for why, count in discarded.items() if count) or "none"
    console.print(
        f"Advantages ({result['normalization']}) for run {result['run_number']}: {result['scored']} of "
        f"{result['rollouts']} rollout(s) scored, {result['groups']} group(s); discarded: {dropped}."
    )
    print_metrics(fetch_metrics(client, run))


@command
def discard(
    ref: Annotated[str, typer.Argument(metavar="ROLLOUT", help="Rollout id (ro_…) or RUN/ATTEMPT, e.g. 47/3.")],
    reason: Annotated[str | None, typer.Option(help="Why (shown in the UI and exports).")] = None,
    undo: Annotated[bool, typer.Option("--undo", help="Take the discard back.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Mark a rollout discarded (left out of exports by default), or take the mark back with --undo."""
    client = State.client()
    rollout_id = client.get_rollout(ref, events=False).id if split_ref(ref) else ref
    body: dict[str, Any] = {"discarded": not undo}
    if reason is not None:
        body["reason"] = reason
    result = client._t.request("POST", f"/rollouts/{rollout_id}/discard", json=body)
    if as_json:
        print_json(result)
    elif result["discarded"]:
        console.print(f"Discarded {result['id']}: {result['discard_reason']}.")
    else:
        console.print(f"{result['id']} is no longer discarded.")


@command
def metrics(
    run: Annotated[str, typer.Argument(help="Run number or id.")],
    exclude_discarded: Annotated[
        bool, typer.Option("--exclude-discarded", help="Leave discarded rollouts out of the numbers.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Count, mean, std, min and max of every numeric score, the reward and the advantage of a run."""
    found = fetch_metrics(State.client(), run, include_discarded=not exclude_discarded)
    if as_json:
        print_json(found)
    else:
        print_metrics(found)
