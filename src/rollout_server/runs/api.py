"""REST routes for runs."""

from __future__ import annotations

from typing import Literal

from fastapi import Query, Response

from ..api.deps import Ctx, CurrentCaller, ReadSession, WriteSession
from ..api.routing import api_router
from ..common.pagination import DEFAULT_LIMIT, MAX_LIMIT
from ..common.schemas import Page
from . import service
from .schemas import RunCreate, RunDetail, RunFinish, RunOut, RunTaskItem

router = api_router(tags=["runs"])


@router.post("/runs", response_model=RunDetail, status_code=201)
def start_run(body: RunCreate, caller: CurrentCaller, session: WriteSession, ctx: Ctx) -> RunDetail:
    """Start a run of a dataset (latest version unless pinned), of a run's failed tasks, or with no dataset."""
    run = service.start_run(session, caller.workspace_id, body)
    return service.run_detail(session, run, ctx.settings.base_url)


@router.get("/runs", response_model=Page[RunOut])
def list_runs(
    caller: CurrentCaller,
    session: ReadSession,
    ctx: Ctx,
    status: Literal["running", "finished", "failed", "cancelled"] | None = None,
    workflow_name: str | None = None,
    group_id: str | None = None,
    dataset: str | None = Query(None, description="Dataset name or ID."),
    agent_name: str | None = None,
    model: str | None = None,
    tag: str | None = None,
    cursor: str | None = None,
    limit: int = Query(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT),
) -> Page[RunOut]:
    """Runs, newest first, with filters."""
    filters: dict[str, object] = {"status": status, "workflow_name": workflow_name, "group_id": group_id,
                                  "dataset": dataset, "agent_name": agent_name, "model": model, "tag": tag}
    return service.list_runs(session, caller.workspace_id, filters=filters, cursor=cursor, limit=limit,
                             base_url=ctx.settings.base_url)


@router.get("/runs/{run}", response_model=RunDetail)
def get_run(run: str, caller: CurrentCaller, session: ReadSession, ctx: Ctx) -> RunDetail:
    """A run by ID or number, with aggregates (counts by status, mean reward, tokens, cost, p50/p95 latency)."""
    return service.run_detail(session, service.resolve_run(session, caller.workspace_id, run), ctx.settings.base_url)


@router.post("/runs/{run}/finish", response_model=RunDetail)
def finish_run(run: str, body: RunFinish, caller: CurrentCaller, session: WriteSession, ctx: Ctx) -> RunDetail:
    """Mark a run finished (or failed, cancelled)."""
    found = service.finish_run(session, caller.workspace_id, run, body.status)
    return service.run_detail(session, found, ctx.settings.base_url)


@router.delete("/runs/{run}", status_code=204, response_class=Response)
def delete_run(run: str, caller: CurrentCaller, session: WriteSession) -> Response:
    """Delete a run and everything recorded in it: rollouts, trace events, scores, scoring jobs. Irreversible."""
    service.delete_run(session, caller.workspace_id, run)
    return Response(status_code=204)


@router.get("/runs/{run}/tasks", response_model=Page[RunTaskItem])
def list_run_tasks(run: str, caller: CurrentCaller, session: ReadSession, cursor: str | None = None,
                   limit: int = Query(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT)) -> Page[RunTaskItem]:
    """What `run.tasks` iterates: the pinned version's tasks (or the source run's failed ones) x repeats."""
    found = service.resolve_run(session, caller.workspace_id, run)
    return service.list_run_tasks(session, found, cursor=cursor, limit=limit)
