"""REST routes for rollouts, their trace events and scores, and the many-rollout ingestion batch."""

from __future__ import annotations

from collections import Counter
from typing import Literal

import orjson
from fastapi import Query, Response

from ..api.deps import Ctx, CurrentCaller, ReadSession, WriteSession
from ..api.routing import api_router
from ..common.pagination import DEFAULT_LIMIT, MAX_LIMIT
from ..common.schemas import INT32_MAX, Page, UTCTime
from ..errors import Conflict, InvalidInput, NotFound
from . import service
from .ingest import EventOutcome, EventWriter, ItemDict
from .repository import RolloutRepository
from .schemas import (
    EventBatch,
    EventOut,
    IngestBatch,
    IngestResult,
    RolloutCreate,
    RolloutDetail,
    RolloutFinish,
    RolloutOut,
    ScoreIn,
    ScoreOut,
)

router = api_router(tags=["rollouts"])

Limit = Query(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT)
EventsLimit = Query(200, ge=0, le=MAX_LIMIT, description="Events in the first page of the trace (0: none).")


def _check_count(ctx: Ctx, count: int, field: str) -> None:
    if count > ctx.settings.max_ingest_events:
        raise InvalidInput(f"A batch holds at most {ctx.settings.max_ingest_events} events; this one has {count}. "
                           "Split it into several requests.", field=field)


@router.post("/runs/{run}/rollouts", response_model=RolloutOut, status_code=201)
def start_rollout(run: str, body: RolloutCreate, caller: CurrentCaller, session: WriteSession,
                  ctx: Ctx) -> RolloutOut:
    """Start an attempt at a task of the run (or an ad-hoc one without a task)."""
    rollout = service.start_rollout(session, caller.workspace_id, run, body)
    return service.rollouts_out(session, [rollout], ctx.settings.base_url)[0]


@router.get("/runs/{run}/rollouts/{attempt}", response_model=RolloutDetail)
def get_attempt(run: str, attempt: int, caller: CurrentCaller, session: ReadSession, ctx: Ctx,
                events_limit: int = EventsLimit) -> RolloutDetail:
    """A rollout by its human handle: run number (or ID) and attempt number."""
    rollout = service.get_by_attempt(session, caller.workspace_id, run, attempt)
    return service.rollout_detail(session, ctx.store, rollout, ctx.settings.base_url, events_limit)


@router.get("/rollouts", response_model=Page[RolloutOut])
def list_rollouts(
    caller: CurrentCaller,
    session: ReadSession,
    ctx: Ctx,
    run: str | None = Query(None, description="Run ID or number."),
    task_id: str | None = None,
    status: Literal["running", "succeeded", "failed", "errored", "cancelled"] | None = None,
    workflow_name: str | None = None,
    group_id: str | None = None,
    started_after: UTCTime | None = None,
    started_before: UTCTime | None = None,
    reward_min: float | None = None,
    reward_max: float | None = None,
    step: int | None = Query(None, ge=0, le=INT32_MAX),
    group_key: str | None = None,
    cursor: str | None = None,
    limit: int = Limit,
) -> Page[RolloutOut]:
    """Rollouts, newest first, with filters."""
    filters = {"run": run, "task_id": task_id, "status": status, "workflow_name": workflow_name,
               "group_id": group_id, "started_after": started_after, "started_before": started_before,
               "reward_min": reward_min, "reward_max": reward_max, "step": step, "group_key": group_key}
    return service.list_rollouts(session, caller.workspace_id, filters=filters, cursor=cursor, limit=limit,
                                 base_url=ctx.settings.base_url)


@router.get("/rollouts/{rollout_id}", response_model=RolloutDetail)
def get_rollout(rollout_id: str, caller: CurrentCaller, session: ReadSession, ctx: Ctx,
                events_limit: int = EventsLimit) -> RolloutDetail:
    """A rollout with its scores and the first page of its trace."""
    rollout = service.get_rollout(session, caller.workspace_id, rollout_id)
    return service.rollout_detail(session, ctx.store, rollout, ctx.settings.base_url, events_limit)


@router.delete("/rollouts/{rollout_id}", status_code=204, response_class=Response)
def delete_rollout(rollout_id: str, caller: CurrentCaller, session: WriteSession) -> Response:
    """Delete a rollout with its trace events and scores. Irreversible."""
    service.delete_rollout(session, caller.workspace_id, rollout_id)
    return Response(status_code=204)


@router.get("/rollouts/{rollout_id}/events", response_model=Page[EventOut])
def list_events(rollout_id: str, caller: CurrentCaller, session: ReadSession, ctx: Ctx,
                cursor: str | None = None, limit: int = Query(500, ge=1, le=MAX_LIMIT)) -> Page[EventOut]:
    """The rollout's trace in order, paged."""
    rollout = service.get_rollout(session, caller.workspace_id, rollout_id)
    return service.events_page(session, ctx.store, rollout, cursor=cursor, limit=limit)


@router.post("/rollouts/{rollout_id}/events", response_model=IngestResult)
def append_events(rollout_id: str, body: EventBatch, caller: CurrentCaller, session: WriteSession,
                  ctx: Ctx) -> Response:
    """Append trace events; re-sent ids are reported as duplicates and stored once."""
    _check_count(ctx, len(body.events), "events")
    service.get_rollout(session, caller.workspace_id, rollout_id)
    writer = EventWriter(session, ctx.store, caller.workspace_id, ctx.settings.inline_payload_bytes)
    outcome = writer.write([(rollout_id, e) for e in body.events])
    if outcome.rejected:
        # One rollout, one reason: refuse the whole request rather than half of it.
        first = next(r for r in outcome.results if r["status"] == "rejected")
        raise Conflict(f"Cannot append: {first['error']}.")
    return _answer(outcome)


@router.post("/rollouts/{rollout_id}/finish", response_model=RolloutOut)
def finish_rollout(rollout_id: str, body: RolloutFinish, caller: CurrentCaller, session: WriteSession,
                   ctx: Ctx) -> RolloutOut:
    """Finish a rollout with its output, status and error; a rollout finishes once (409 after)."""
    rollout = service.finish_rollout(session, caller.workspace_id, rollout_id, body)
    return service.rollouts_out(session, [rollout], ctx.settings.base_url)[0]


@router.post("/rollouts/{rollout_id}/scores", response_model=ScoreOut, status_code=201)
def add_score(rollout_id: str, body: ScoreIn, caller: CurrentCaller, session: WriteSession) -> ScoreOut:
    """Add a score; the run's reward score also sets the rollout's reward."""
    rollout = service.get_rollout(session, caller.workspace_id, rollout_id, for_update=True)
    return service.score_out(service.add_score(session, caller.workspace_id, rollout, body))


@router.get("/rollouts/{rollout_id}/scores", response_model=Page[ScoreOut])
def list_scores(rollout_id: str, caller: CurrentCaller, session: ReadSession) -> Page[ScoreOut]:
    """Scores of a rollout, oldest first."""
    rollout = service.get_rollout(session, caller.workspace_id, rollout_id)
    scores = RolloutRepository(session).scores_of([rollout.id])[rollout.id]
    return Page(items=[service.score_out(s) for s in scores])


@router.post("/ingest", response_model=IngestResult)
def ingest(body: IngestBatch, caller: CurrentCaller, session: WriteSession, ctx: Ctx) -> Response:
    """Events, scores and finishes for many rollouts in one request, answered per item.
    A schema-invalid item rejects the whole request (422, nothing stored); an item for an unknown or
    finished rollout is `rejected` on its own while the rest are stored. Finishes apply last."""
    _check_count(ctx, len(body.events), "events")
    # Lock every rollout the batch touches at once, in ID order, so concurrent batches never deadlock.
    locked = RolloutRepository(session).lock_many(
        caller.workspace_id, [i.rollout_id for group in (body.events, body.scores, body.finishes) for i in group]
    )
    writer = EventWriter(session, ctx.store, caller.workspace_id, ctx.settings.inline_payload_bytes)
    outcome = writer.write([(e.rollout_id, e) for e in body.events], locked=locked)
    score_results: list[ItemDict] = []
    for index, score in enumerate(body.scores):
        try:
            rollout = service.get_rollout(session, caller.workspace_id, score.rollout_id, for_update=True)
            payload = ScoreIn(**score.model_dump(exclude={"rollout_id"}))
            stored, created = service.add_score_once(session, caller.workspace_id, rollout, payload)
            score_results.append(_item(index, stored.id, "created" if created else "duplicate"))
        except (NotFound, InvalidInput) as error:
            score_results.append(_item(index, None, "rejected", error.detail))
    finish_results: list[ItemDict] = []
    for index, finish in enumerate(body.finishes):
        try:
            done = service.finish_rollout(session, caller.workspace_id, finish.rollout_id,
                                          RolloutFinish(**finish.model_dump(exclude={"rollout_id"})))
            finish_results.append(_item(index, done.id, "created"))
        except Conflict:
            finish_results.append(_item(index, finish.rollout_id, "duplicate"))
        except NotFound as error:
            finish_results.append(_item(index, None, "rejected", error.detail))
    return _answer(outcome, score_results, finish_results)


def _answer(outcome: EventOutcome, scores: list[ItemDict] | None = None,
            finishes: list[ItemDict] | None = None) -> Response:
    """An IngestResult, built as plain data and encoded once: validating a 1,000-item IngestResult only to
    serialise it again cost a tenth of the request. `response_model` still documents it (and tests hold the
    answers to it)."""
    scores, finishes = scores or [], finishes or []
    counts = Counter(r["status"] for r in scores + finishes)
    return Response(orjson.dumps({
        "created": outcome.created + counts["created"], "duplicates": outcome.duplicates + counts["duplicate"],
        "rejected": outcome.rejected + counts["rejected"], "events": outcome.results, "scores": scores,
        "finishes": finishes,
    }), media_type="application/json")


def _item(index: int, item_id: str | None, status: str, error: str | None = None) -> ItemDict:
    return {"index": index, "id": item_id, "status": status, "error": error}
