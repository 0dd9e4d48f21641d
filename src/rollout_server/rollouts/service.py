"""Business rules for rollouts: start within a run, append events, finish once, score, read back."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from ..common.idempotency import create_once, replay, request_digest
from ..common.pagination import decode_cursor, encode_cursor
from ..common.schemas import INT32_MAX, Page
from ..datasets.repository import DatasetRepository, visible_in
from ..db.types import utcnow
from ..errors import Conflict, InvalidInput, NotFound
from ..ids import new_id
from ..models import Rollout, Run, Score, Task, TraceEvent
from ..runs.repository import RunRepository
from ..runs.service import resolve_run
from ..storage import BlobStore, blob_key
from .repository import RolloutRepository
from .schemas import EventOut, RolloutCreate, RolloutDetail, RolloutFinish, RolloutOut, ScoreIn, ScoreOut


def rollout_url(base_url: str, workspace_id: str, run_number: int, attempt: int) -> str:
    return f"{base_url}/w/{workspace_id}/runs/{run_number}/rollouts/{attempt}"


def get_rollout(session: Session, workspace_id: str, rollout_id: str, *, for_update: bool = False) -> Rollout:
    rollout = RolloutRepository(session).get(workspace_id, rollout_id, for_update=for_update)
    if rollout is None:
        raise NotFound(f"No rollout {rollout_id} in this workspace.")
    return rollout


def delete_rollout(session: Session, workspace_id: str, rollout_id: str) -> None:
    """Delete a rollout with its events, scores and jobs (the database cascades). Its run's aggregates are
    computed on read, so they follow; the attempt number is not reused."""
    rollout = get_rollout(session, workspace_id, rollout_id, for_update=True)
    session.execute(delete(Rollout).where(Rollout.id == rollout.id, Rollout.workspace_id == workspace_id))
    session.expunge(rollout)


def get_by_attempt(session: Session, workspace_id: str, run_ref: str, attempt: int) -> Rollout:
    run = resolve_run(session, workspace_id, run_ref)
    rollout = RolloutRepository(session).get_by_attempt(workspace_id, run.id, attempt) if attempt <= INT32_MAX else None
    if rollout is None:
        raise NotFound(f"Run {run.number} has no attempt {attempt}.")
    return rollout


def start_rollout(session: Session, workspace_id: str, run_ref: str, body: RolloutCreate) -> Rollout:
    run = resolve_run(session, workspace_id, run_ref)
    if body.client_key is None:
        return _start_rollout(session, workspace_id, run, body, None)
    key, digest, repo = body.client_key, request_digest(body), RolloutRepository(session)
    existing = repo.get_by_client_key(run.id, key)
    if existing is not None:
        return replay(existing, digest)
    return create_once(session, lambda: _start_rollout(session, workspace_id, run, body, digest),
                       lambda: repo.get_by_client_key(run.id, key), digest)


def _start_rollout(session: Session, workspace_id: str, run: Run, body: RolloutCreate, digest: str | None) -> Rollout:
    if run.status != "running":
        raise Conflict(f"Run {run.number} is {run.status}; start a new run to record more rollouts.")
    if body.task_id is not None:
        visible = session.scalar(
            select(Task.id).where(Task.id == body.task_id, Task.dataset_id == run.dataset_id,
                                  visible_in(run.dataset_version or 0))
        )
        if run.dataset_id is None or visible is None:
            raise InvalidInput(
                f"Task {body.task_id} is not in run {run.number}'s dataset version; use a task from the run's "
                "task list (GET /api/v1/runs/{run}/tasks).",
                field="task_id",
            )
    attempt = RunRepository(session).take_attempt_number(run.id)
    return RolloutRepository(session).add(
        Rollout(
            id=new_id("ro"), workspace_id=workspace_id, run_id=run.id, attempt=attempt, task_id=body.task_id,
            repeat_index=body.repeat_index, input=body.input, status="running", step=body.step,
            group_key=body.group_key, metadata_=body.metadata, started_at=utcnow(), client_key=body.client_key,
            request_digest=digest,
        )
    )


def finish_rollout(session: Session, workspace_id: str, rollout_id: str, body: RolloutFinish) -> Rollout:
    rollout = get_rollout(session, workspace_id, rollout_id, for_update=True)
    if rollout.status != "running":
        raise Conflict(f"Rollout {rollout_id} is already {rollout.status}; a rollout finishes once.",
                       current_status=rollout.status)
    status = body.status or ("failed" if body.error else "succeeded")
    now = utcnow()
    if body.ended_at is not None:
        now = min(max(body.ended_at, rollout.started_at), now)
    rollout.status = status
    rollout.output = body.output
    rollout.error = body.error
    if body.metadata:
        rollout.metadata_ = {**(rollout.metadata_ or {}), **body.metadata}
    rollout.ended_at = now
    rollout.latency_ms = max(0.0, (now - rollout.started_at).total_seconds() * 1000.0)
    session.flush()
    # Scoring jobs are rows of this transaction: workers see them only once the finish is committed.
    from ..scoring.queue import enqueue_after_finish

    enqueue_after_finish(session, rollout)
    return rollout


def _score_value(body: ScoreIn) -> tuple[str, float | None]:
    value = body.value
    data_type = body.data_type or (
        "boolean" if isinstance(value, bool) else "number" if isinstance(value, int | float) else "category"
    )
    if data_type == "number":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InvalidInput("A number score needs a numeric value.", field="value")
        return data_type, float(value)
    if data_type == "boolean":
        if not isinstance(value, bool):
            raise InvalidInput("A boolean score needs true or false.", field="value")
        return data_type, 1.0 if value else 0.0
    if not isinstance(value, str):
        raise InvalidInput(f"A {data_type} score needs a string value.", field="value")
    return data_type, None


def add_score(session: Session, workspace_id: str, rollout: Rollout, body: ScoreIn) -> Score:
    return add_score_once(session, workspace_id, rollout, body)[0]


def add_score_once(session: Session, workspace_id: str, rollout: Rollout, body: ScoreIn) -> tuple[Score, bool]:
    """Add a score; with a client `id` already stored on this rollout, return that one instead (False)."""
    data_type, numeric = _score_value(body)
    repo = RolloutRepository(session)
    if body.id is not None:
        existing = repo.score_by_client_id(rollout.id, body.id)
        if existing is not None:
            return existing, False
    score = repo.add_score(
        Score(
            id=new_id("score"), workspace_id=workspace_id, rollout_id=rollout.id, name=body.name,
            data_type=data_type, value=body.value, numeric_value=numeric, source=body.source,
            comment=body.comment, author=body.author, client_id=body.id,
        )
    )
    run = session.get(Run, rollout.run_id)
    if run is not None and body.name == run.reward_score and numeric is not None:
        rollout.reward = numeric
        session.flush()
    return score, True


def score_out(score: Score) -> ScoreOut:
    return ScoreOut.model_validate(score)


def rollouts_out(session: Session, rollouts: list[Rollout], base_url: str) -> list[RolloutOut]:
    runs, keys = RolloutRepository(session).context_of(rollouts)
    out = []
    for r in rollouts:
        run = runs[r.run_id]
        out.append(
            RolloutOut(
                id=r.id, run_id=r.run_id, run_number=run.number, attempt=r.attempt,
                url=rollout_url(base_url, r.workspace_id, run.number, r.attempt), task_id=r.task_id,
                task_key=keys.get(r.task_id or ""), repeat_index=r.repeat_index, input=r.input, status=r.status,
                output=r.output, error=r.error, reward=r.reward, advantage=r.advantage, discarded=r.discarded,
                discard_reason=r.discard_reason, step=r.step, group_key=r.group_key, metadata=r.metadata_,
                started_at=r.started_at, ended_at=r.ended_at, latency_ms=r.latency_ms,
                input_tokens=r.input_tokens, output_tokens=r.output_tokens,
                total_tokens=r.input_tokens + r.output_tokens, cost=r.cost, event_count=r.event_count,
            )
        )
    return out


def event_out(event: TraceEvent, store: BlobStore, workspace_id: str) -> EventOut:
    payload: dict[str, Any] = dict(event.payload or {})
    if event.payload_blob:
        payload = orjson.loads(b"".join(store.iter_bytes(blob_key(workspace_id, event.payload_blob))))
    return EventOut(
        id=event.event_id, seq=event.seq, kind=event.kind, parent_id=event.parent_id, name=event.name,
        started_at=event.started_at, ended_at=event.ended_at, duration_ms=event.duration_ms,
        metadata=event.metadata_, **{k: v for k, v in payload.items() if k not in EventOut.model_fields},
    )


def events_page(session: Session, store: BlobStore, rollout: Rollout, *, cursor: str | None,
                limit: int) -> Page[EventOut]:
    after = decode_cursor(cursor, (int, int))
    rows = RolloutRepository(session).events_page(rollout.id, after=(after[0], after[1]) if after else None,
                                                  limit=limit + 1)
    page = rows[:limit]
    next_cursor = encode_cursor(page[-1].seq, page[-1].pk) if len(rows) > limit else None
    return Page(items=[event_out(e, store, rollout.workspace_id) for e in page], next_cursor=next_cursor)


def rollout_detail(session: Session, store: BlobStore, rollout: Rollout, base_url: str,
                   events_limit: int) -> RolloutDetail:
    base = rollouts_out(session, [rollout], base_url)[0]
    scores = RolloutRepository(session).scores_of([rollout.id])[rollout.id]
    events = events_page(session, store, rollout, cursor=None, limit=events_limit) if events_limit else None
    return RolloutDetail(
        **base.model_dump(), scores=[score_out(s) for s in scores],
        events=events.items if events else [], events_next_cursor=events.next_cursor if events else None,
    )


def list_rollouts(session: Session, workspace_id: str, *, filters: dict[str, Any], cursor: str | None, limit: int,
                  base_url: str) -> Page[RolloutOut]:
    if filters.get("run") is not None:
        filters["run_id"] = resolve_run(session, workspace_id, str(filters.pop("run"))).id
    after = decode_cursor(cursor, (datetime, str))
    before = (after[0], after[1]) if after else None
    rows = RolloutRepository(session).list_page(workspace_id, filters=filters, before=before, limit=limit + 1)
    page = rows[:limit]
    next_cursor = encode_cursor(page[-1].started_at.isoformat(), page[-1].id) if len(rows) > limit else None
    return Page(items=rollouts_out(session, page, base_url), next_cursor=next_cursor)


def task_files_of(session: Session, rollout: Rollout) -> list[Any]:
    if rollout.task_id is None:
        return []
    return DatasetRepository(session).files_of([rollout.task_id])[rollout.task_id]


GROUP_BY = ("workflow", "dataset", "agent", "model", "status", "run")


def trace_groups(session: Session, workspace_id: str, *, filters: dict[str, Any],
                 group_by: str) -> list[dict[str, Any]]:
    """Rollouts matching `filters` grouped by a run field or status: count, success rate, mean reward,
    p50/p95 latency, tokens and cost per group (the Traces page's group-by view)."""
    if group_by not in GROUP_BY:
        raise InvalidInput(f"Group by one of {', '.join(GROUP_BY)}.", field="group_by")
    if filters.get("run") is not None:
        filters["run_id"] = resolve_run(session, workspace_id, str(filters.pop("run"))).id
    groups = RolloutRepository(session).group_stats(workspace_id, filters, group_by)
    names = RunRepository(session).dataset_names([g["key"] for g in groups if g["key"]]) if group_by == "dataset" \
        else {}
    for group in groups:
        group["label"] = names.get(group["key"], group["key"]) if group_by == "dataset" else group["key"]
        group["success_rate"] = group["succeeded"] / group["finished"] if group["finished"] else None
    return groups
