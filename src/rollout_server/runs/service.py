"""Business rules for runs: starting (pinning a dataset version), the task list, aggregates, finishing."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from ..common.idempotency import create_once, replay, request_digest
from ..common.pagination import decode_cursor, encode_cursor
from ..common.schemas import INT32_MAX, Page
from ..datasets import service as datasets
from ..db.types import utcnow
from ..errors import Conflict, InvalidInput, NotFound
from ..ids import has_prefix, new_id
from ..models import Run
from ..workspaces.repository import WorkspaceRepository
from .repository import RunRepository
from .schemas import RunAggregates, RunCreate, RunDetail, RunOut, RunRef, RunTaskItem


def run_url(base_url: str, workspace_id: str, number: int) -> str:
    return f"{base_url}/w/{workspace_id}/runs/{number}"


def resolve_run(session: Session, workspace_id: str, ref: str | int, *, for_update: bool = False) -> Run:
    """A run by ID (`run_…`) or by its per-workspace number (`47`)."""
    repo = RunRepository(session)
    text = str(ref).strip()
    run = None
    if text.isdigit() and int(text) <= INT32_MAX:
        run = repo.get_by_number(workspace_id, int(text), for_update=for_update)
    elif has_prefix(text, "run"):
        run = repo.get(workspace_id, text, for_update=for_update)
    if run is None:
        raise NotFound(f"No run '{text}' in this workspace (use a run ID like run_… or its number).")
    return run


def start_run(session: Session, workspace_id: str, body: RunCreate) -> Run:
    if body.client_key is None:
        return _start_run(session, workspace_id, body, None)
    key, digest, repo = body.client_key, request_digest(body), RunRepository(session)
    existing = repo.get_by_client_key(workspace_id, key)
    if existing is not None:
        return replay(existing, digest)
    return create_once(session, lambda: _start_run(session, workspace_id, body, digest),
                       lambda: repo.get_by_client_key(workspace_id, key), digest)


def _start_run(session: Session, workspace_id: str, body: RunCreate, digest: str | None) -> Run:
    source = None
    if body.only_failed_from is not None:
        try:
            source = resolve_run(session, workspace_id, body.only_failed_from)
        except NotFound as error:
            raise NotFound(error.detail, errors=[{"field": "only_failed_from", "message": "no such run"}]) from error
    dataset = None
    if body.dataset is not None:
        try:
            dataset = datasets.resolve_dataset(session, workspace_id, body.dataset)
        except NotFound as error:
            raise NotFound(error.detail, errors=[{"field": "dataset", "message": "no such dataset"}]) from error
    elif source is not None and source.dataset_id is not None:
        dataset = datasets.resolve_dataset(session, workspace_id, source.dataset_id)
    if body.dataset_version is not None and dataset is None:
        raise InvalidInput("dataset_version needs a dataset.", field="dataset_version")
    if source is not None and dataset is not None and source.dataset_id not in (None, dataset.id):
        raise InvalidInput("only_failed_from names a run of another dataset.", field="only_failed_from")
    if body.reward_below is not None and source is None:
        raise InvalidInput("reward_below needs only_failed_from (the run whose low-reward tasks to re-run).",
                           field="reward_below")
    if source is not None and dataset is None:
        raise InvalidInput("only_failed_from names a run without a dataset; there are no tasks to re-run.",
                           field="only_failed_from")
    version = datasets.resolve_version(session, dataset, body.dataset_version) if dataset else None
    number = WorkspaceRepository(session).take_run_number(workspace_id)
    return RunRepository(session).add(
        Run(
            id=new_id("run"),
            workspace_id=workspace_id,
            number=number,
            dataset_id=dataset.id if dataset else None,
            dataset_version=version,
            workflow_name=body.workflow_name,
            group_id=body.group_id,
            agent_name=body.agent_name,
            agent_version=body.agent_version,
            model=body.model,
            params=body.params,
            tags=body.tags,
            num_repeats=body.num_repeats,
            reward_score=body.reward_score,
            rerun_of_id=source.id if source else None,
            rerun_statuses=list(body.failed_statuses) if source else None,
            rerun_reward_below=body.reward_below if source else None,
            status="running",
            next_attempt=1,
            client_key=body.client_key,
            request_digest=digest,
        )
    )


def finish_run(session: Session, workspace_id: str, ref: str, status: str) -> Run:
    run = resolve_run(session, workspace_id, ref, for_update=True)
    if run.status != "running":
        raise Conflict(f"Run {run.number} is already {run.status}.")
    run.status = status
    run.finished_at = utcnow()
    session.flush()
    return run


def delete_run(session: Session, workspace_id: str, ref: str) -> None:
    """Delete a run with its rollouts, events, scores and jobs (the database cascades). Its number is not
    reused. A run that re-runs are made from is refused (409): their task lists are read from its rollouts.
    Payload blobs stay in the store: they are content-addressed, so other events or files may share them."""
    run = resolve_run(session, workspace_id, ref, for_update=True)
    reruns = session.scalars(select(Run.number).where(Run.rerun_of_id == run.id).order_by(Run.number)).all()
    if reruns:
        raise Conflict(f"Run {run.number} is the source of re-run {', '.join(map(str, reruns))}, whose tasks are "
                       "read from its rollouts; delete the re-runs first.")
    session.execute(delete(Run).where(Run.id == run.id, Run.workspace_id == workspace_id))
    session.expunge(run)


def runs_out(session: Session, runs: list[Run], base_url: str) -> list[RunOut]:
    repo = RunRepository(session)
    names = repo.dataset_names([r.dataset_id for r in runs if r.dataset_id])
    sources = repo.numbers_of([r.rerun_of_id for r in runs if r.rerun_of_id])
    return [
        RunOut(
            id=r.id, number=r.number, url=run_url(base_url, r.workspace_id, r.number), dataset_id=r.dataset_id,
            dataset_name=names.get(r.dataset_id or ""), dataset_version=r.dataset_version,
            workflow_name=r.workflow_name, group_id=r.group_id, agent_name=r.agent_name,
            agent_version=r.agent_version, model=r.model, params=r.params, tags=r.tags, num_repeats=r.num_repeats,
            reward_score=r.reward_score,
            rerun_of=RunRef(id=r.rerun_of_id, number=sources[r.rerun_of_id]) if r.rerun_of_id in sources else None,
            rerun_reward_below=r.rerun_reward_below,
            status=r.status, created_at=r.created_at, finished_at=r.finished_at,
        )
        for r in runs
    ]


def _percentile(sorted_values: list[float], fraction: float) -> float | None:
    if not sorted_values:
        return None
    position = (len(sorted_values) - 1) * fraction
    low = int(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


def aggregates(session: Session, run: Run) -> RunAggregates:
    repo = RunRepository(session)
    by_status = repo.status_counts(run.id)
    totals = repo.totals(run.id)
    latencies = repo.latencies(run.id)
    return RunAggregates(
        rollout_count=sum(by_status.values()),
        by_status=by_status,
        total_tokens=totals["input_tokens"] + totals["output_tokens"],
        latency_p50_ms=_percentile(latencies, 0.5),
        latency_p95_ms=_percentile(latencies, 0.95),
        **totals,
    )


def run_detail(session: Session, run: Run, base_url: str) -> RunDetail:
    out = runs_out(session, [run], base_url)[0]
    task_count = RunRepository(session).count_tasks(run) * run.num_repeats
    return RunDetail(**out.model_dump(), task_count=task_count, aggregates=aggregates(session, run))


def list_runs(session: Session, workspace_id: str, *, filters: dict[str, object], cursor: str | None, limit: int,
              base_url: str) -> Page[RunOut]:
    after = decode_cursor(cursor, (datetime, str))
    if filters.get("dataset"):
        filters["dataset_id"] = datasets.resolve_dataset(session, workspace_id, str(filters["dataset"])).id
    before = (after[0], after[1]) if after else None
    rows = RunRepository(session).list_page(workspace_id, filters=filters, before=before, limit=limit + 1)
    page = rows[:limit]
    next_cursor = encode_cursor(page[-1].created_at.isoformat(), page[-1].id) if len(rows) > limit else None
    return Page(items=runs_out(session, page, base_url), next_cursor=next_cursor)


def list_run_tasks(session: Session, run: Run, *, cursor: str | None, limit: int) -> Page[RunTaskItem]:
    """The run's task list: each task of the pinned version (or only the failed ones) x repeats."""
    repo = RunRepository(session)
    after = decode_cursor(cursor, (str, int, int))
    from_key, after_repeat, position = (after[0], after[1], after[2] + 1) if after else (None, -1, 0)
    repeats = run.num_repeats
    tasks = repo.tasks_page(run, from_key=from_key, limit=limit // repeats + 2)
    task_outs = datasets.tasks_out(session, tasks)
    items: list[RunTaskItem] = []
    more = False
    for task in task_outs:
        for repeat in range(repeats):
            if task.key == from_key and repeat <= after_repeat:
                continue
            if len(items) == limit:
                more = True
                break
            items.append(RunTaskItem(position=position, repeat_index=repeat, task=task))
            position += 1
        if more:
            break
    if not more and len(tasks) == limit // repeats + 2:
        more = True
    next_cursor = None
    if more and items:
        last = items[-1]
        next_cursor = encode_cursor(last.task.key, last.repeat_index, last.position)
    return Page(items=items, next_cursor=next_cursor)
