"""`rollout runs ...`, `rollout rollouts ...` and `rollout tail RUN`."""

from __future__ import annotations

import json
import sys
import time
from datetime import datetime, timedelta
from typing import Annotated

import typer
from rich.text import Text

from .._types import Rollout
from .common import USAGE, JsonOption, State, command, console, fail, print_json, to_jsonable
from .render import millis, rollout_view, rollouts_table, run_panel, runs_table, status_text

runs_app = typer.Typer(help="Runs: executions of a dataset version (or production traffic).", no_args_is_help=True)
rollouts_app = typer.Typer(help="Rollouts: single attempts, with their traces.", no_args_is_help=True)


@runs_app.command("list")
@command
def list_runs(
    status: Annotated[str | None, typer.Option(help="running, finished, failed or cancelled.")] = None,
    workflow: Annotated[str | None, typer.Option(help="Workflow name.")] = None,
    group: Annotated[str | None, typer.Option(help="Group id.")] = None,
    dataset: Annotated[str | None, typer.Option(help="Dataset name or id.")] = None,
    agent: Annotated[str | None, typer.Option(help="Agent name.")] = None,
    tag: Annotated[str | None, typer.Option(help="Runs with this tag.")] = None,
    limit: Annotated[int, typer.Option(help="At most this many runs.")] = 20,
    as_json: JsonOption = False,
) -> None:
    """List runs, newest first."""
    runs = list(
        State.client().list_runs(
            status=status,
            workflow_name=workflow,
            group_id=group,
            dataset=dataset,
            agent_name=agent,
            tag=tag,
            limit=limit,
        )
    )
    if as_json:
        print_json(runs)
    elif not runs:
        console.print("No runs match.")
    else:
        console.print(runs_table(runs))


@runs_app.command("start")
@command
def start_run(
    dataset: Annotated[
        str | None, typer.Argument(help="Dataset name or id (default with --only-failed-from: that run's).")
    ] = None,
    version: Annotated[int | None, typer.Option(help="Dataset version to pin (default: the latest).")] = None,
    only_failed_from: Annotated[
        str | None, typer.Option("--only-failed-from", help="Run number or id: run only its failing tasks.")
    ] = None,
    failed_status: Annotated[
        list[str] | None,
        typer.Option("--failed-status", help="With --only-failed-from: statuses that count (default failed, errored)."),
    ] = None,
    reward_below: Annotated[
        float | None,
        typer.Option("--reward-below", help="With --only-failed-from: also its tasks rewarded below this."),
    ] = None,
    workflow_name: Annotated[str | None, typer.Option("--workflow-name", help="Workflow name.")] = None,
    group: Annotated[str | None, typer.Option(help="Group id.")] = None,
    agent: Annotated[str | None, typer.Option(help="Agent name.")] = None,
    model: Annotated[str | None, typer.Option(help="Model name.")] = None,
    tag: Annotated[list[str] | None, typer.Option(help="Tag (repeatable).")] = None,
    repeats: Annotated[int, typer.Option("--repeats", help="Rollouts per task.", min=1)] = 1,
    as_json: JsonOption = False,
) -> None:
    """Start a run of a dataset, or of the failing tasks of an earlier run; prints its number and URL."""
    if dataset is None and only_failed_from is None:
        raise fail("give a DATASET, or --only-failed-from RUN", USAGE)
    if (reward_below is not None or failed_status) and only_failed_from is None:
        raise fail("--reward-below and --failed-status apply with --only-failed-from", USAGE)
    run = State.client().start_run(
        dataset,
        version=version,
        workflow_name=workflow_name,
        group_id=group,
        agent=agent,
        model=model,
        tags=tag,
        num_repeats=repeats,
        only_failed_from=only_failed_from,
        failed_statuses=failed_status or None,
        reward_below=reward_below,
    )
    info = run.info
    if as_json:
        print_json(info)
        return
    tasks = getattr(info, "task_count", None)
    detail = f", {tasks} task(s)" if tasks is not None else ""
    console.print(f"Started run [bold]{info.number}[/] ({info.id}){detail}.")
    console.print(info.url, soft_wrap=True)


@runs_app.command("show")
@command
def show_run(
    run: Annotated[str, typer.Argument(help="Run number or id.")],
    rollouts: Annotated[int, typer.Option(help="Latest rollouts to list (0: none).")] = 10,
    as_json: JsonOption = False,
) -> None:
    """Show a run: settings, counts by status, reward, tokens, cost, latency, and its latest rollouts."""
    client = State.client()
    found = client.get_run(run)
    latest = list(client.list_rollouts(run=found.id, limit=rollouts)) if rollouts else []
    if as_json:
        print_json({"run": found.info, "rollouts": latest})
        return
    console.print(run_panel(found.info))
    if latest:
        console.print(rollouts_table(latest))


@runs_app.command("delete")
@command
def delete_run(
    run: Annotated[str, typer.Argument(help="Run number or id.")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask first.")] = False,
) -> None:
    """Delete a run and everything recorded in it (rollouts, trace events, scores). Irreversible."""
    client = State.client()
    found = client.get_run(run)
    count = found.info.aggregates.rollout_count if found.info.aggregates else 0
    what = f"run {found.number} and its {count} rollout(s)"
    _confirm(f"Delete {what} ({found.id})?", yes)
    client.delete_run(found.id)
    console.print(f"Deleted {what}.")


@rollouts_app.command("delete")
@command
def delete_rollout(
    ref: Annotated[str, typer.Argument(help="Rollout id (ro_…) or RUN/ATTEMPT, e.g. 47/3.")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask first.")] = False,
) -> None:
    """Delete one rollout with its trace events and scores. Irreversible."""
    client = State.client()
    found = client.get_rollout(ref, events=False)
    what = f"rollout {found.run_number}/{found.attempt}"
    _confirm(f"Delete {what} ({found.id})?", yes)
    client.delete_rollout(found.id)
    console.print(f"Deleted {what}.")


def _confirm(question: str, yes: bool) -> None:
    if not yes and not typer.confirm(question):
        raise fail("Nothing deleted.")


@rollouts_app.command("list")
@command
def list_rollouts(
    run: Annotated[str | None, typer.Option(help="Run number or id.")] = None,
    status: Annotated[str | None, typer.Option(help="running, succeeded, failed, errored or cancelled.")] = None,
    limit: Annotated[int, typer.Option(help="At most this many rollouts.")] = 20,
    as_json: JsonOption = False,
) -> None:
    """List rollouts, newest first."""
    rows = list(State.client().list_rollouts(run=run, status=status, limit=limit))
    if as_json:
        print_json(rows)
    elif not rows:
        console.print("No rollouts match.")
    else:
        console.print(rollouts_table(rows))


@rollouts_app.command("show")
@command
def show_rollout(
    ref: Annotated[str, typer.Argument(help="Rollout id (ro_…) or RUN/ATTEMPT, e.g. 47/3.")],
    full: Annotated[bool, typer.Option("--full", help="Do not shorten long contents.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Show a rollout: status, output, scores and its whole trace, nested by span."""
    detail = State.client().get_rollout(ref)
    if as_json:
        print_json(detail)
    else:
        console.print(rollout_view(detail, full=full))


def _line(rollout: Rollout) -> Text:
    text = Text(f"{rollout.run_number}/{rollout.attempt} ", style="bold")
    text.append_text(status_text(rollout.status))
    if rollout.task_key:
        text.append(f"  {rollout.task_key}")
    if rollout.reward is not None:
        text.append(f"  reward {rollout.reward:g}")
    if rollout.latency_ms is not None:
        text.append(f"  {millis(rollout.latency_ms)}", style="dim")
    if rollout.error:
        text.append(f"  {rollout.error[:120]}", style="red")
    return text


def tail(
    run: Annotated[str, typer.Argument(help="Run number or id.")],
    interval: Annotated[float, typer.Option(help="Seconds between polls.")] = 1.0,
    timeout: Annotated[float | None, typer.Option(help="Stop after this many seconds.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Follow a live run: print each rollout as it starts and finishes, until the run ends (Ctrl-C stops)."""
    with_errors = command(_tail)
    with_errors(run, interval, timeout, as_json)


def _tail(run: str, interval: float, timeout: float | None, as_json: bool) -> None:
    client = State.client()
    found = client.get_run(run)
    seen: dict[str, str] = {}
    deadline = None if timeout is None else time.monotonic() + timeout
    since: datetime | None = None

    def emit(rollout: Rollout) -> None:
        if as_json:
            sys.stdout.write(json.dumps({"event": "rollout", **to_jsonable(rollout)}, default=str) + "\n")
            sys.stdout.flush()
        else:
            console.print(_line(rollout))

    if not as_json:
        console.print(f"Following run {found.number} ({found.status}); Ctrl-C to stop.", style="dim")
    try:
        while True:
            info_status = found.refresh().status
            changed: list[Rollout] = []
            # New rollouts since the last poll (overlap by a second; `seen` drops repeats) ...
            after = (since - timedelta(seconds=1)).isoformat() if since else None
            for rollout in client.list_rollouts(run=found.id, started_after=after, limit=None):
                if seen.get(rollout.id) != rollout.status:
                    changed.append(rollout)
                if rollout.started_at and (since is None or rollout.started_at > since):
                    since = rollout.started_at
            # ... and the ones that were running and have finished since.
            running = {r.id for r in client.list_rollouts(run=found.id, status="running", limit=None)}
            for rollout_id, status in list(seen.items()):
                if status == "running" and rollout_id not in running and all(r.id != rollout_id for r in changed):
                    changed.append(client.get_rollout(rollout_id, events=False))
            for rollout in sorted(changed, key=lambda r: (r.attempt, r.status != "running")):
                if seen.get(rollout.id) != rollout.status:
                    seen[rollout.id] = rollout.status
                    emit(rollout)
            if info_status != "running":
                final = found.refresh().info
                if as_json:
                    sys.stdout.write(json.dumps({"event": "run", **to_jsonable(final)}, default=str) + "\n")
                else:
                    console.print(run_panel(final))
                return
            if deadline is not None and time.monotonic() >= deadline:
                return
            time.sleep(interval)
    except KeyboardInterrupt:
        return
