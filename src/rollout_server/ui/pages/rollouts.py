"""A rollout's page: task beside output, the trace as a story (flat) or on a time axis (Gantt), render
toggles, scores and the add-score form, previous/next attempt on the same task, the long-trace pager."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import orjson
from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from pydantic import ValidationError
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from ...api.deps import Ctx
from ...common.pagination import decode_cursor, encode_cursor
from ...datasets import service as datasets
from ...datasets.promotion import promote_rollout
from ...datasets.schemas import PromoteRollout
from ...errors import Conflict, InvalidInput, NotFound
from ...models import Rollout, Run
from ...rollouts import service as rollouts
from ...rollouts.repository import RolloutRepository
from ...rollouts.schemas import ScoreIn
from ...runs import service as runs
from ..deps import CsrfChecked, WorkspaceAccess
from ..render import RenderOptions
from ..story import build_story, gantt_bars, gantt_svg
from ..templating import flash, render

router = APIRouter()

# Events per screen of the flat view: the first screen of a 10,000-event trace stays small and fast; the
# rest arrives page by page as the reader scrolls (HTMX `revealed`), never all at once.
FLAT_PAGE = 100
GANTT_PAGE = 400


def _events(session: Session, rollout: Rollout, cursor: str | None, limit: int) -> tuple[list[Any], str | None]:
    after = decode_cursor(cursor, 2)
    rows = RolloutRepository(session).events_page(rollout.id, after=(after[0], after[1]) if after else None,
                                                  limit=limit + 1)
    page = rows[:limit]
    return page, encode_cursor(page[-1].seq, page[-1].pk) if len(rows) > limit else None


def _page(request: Request, access: Any, ctx: Ctx, session: Session, rollout: Rollout, *,
          score_error: str | None = None, promote_error: str | None = None, status_code: int = 200) -> Response:
    params = request.query_params
    options = RenderOptions.from_query(params)
    view = "gantt" if params.get("view") == "gantt" else "flat"
    cursor = params.get("from") or None
    run = session.get(Run, rollout.run_id)
    assert run is not None
    detail = rollouts.rollouts_out(session, [rollout], "")[0]
    repo = RolloutRepository(session)
    scores = repo.scores_of([rollout.id])[rollout.id]
    task = datasets.get_task(session, access.workspace_id, rollout.task_id) if rollout.task_id else None
    siblings = repo.attempts_on_task(run.id, rollout)
    position = next((i for i, (rid, _) in enumerate(siblings) if rid == rollout.id), 0)
    previous = siblings[position - 1] if position > 0 else None
    following = siblings[position + 1] if position + 1 < len(siblings) else None
    events, next_cursor = _events(session, rollout, cursor, GANTT_PAGE if view == "gantt" else FLAT_PAGE)
    context: dict[str, Any] = {
        "access": access, "nav": "traces", "rollout": detail, "run": run, "scores": scores, "task": task,
        "siblings": siblings, "position": position + 1, "compare_ids": _compare_ids(siblings, position),
        "previous": previous, "following": following,
        "view": view, "options": options,
        "next_cursor": next_cursor, "cursor": cursor, "toggles": _toggles(params, options),
        "permalink": f"/w/{access.workspace_id}/rollouts/{rollout.id}",
        "handle_url": f"/w/{access.workspace_id}/runs/{run.number}/rollouts/{rollout.attempt}",
        "score_error": score_error, "promote_error": promote_error,
    }
    if view == "gantt":
        bars = gantt_bars(session, rollout.id, events)
        context["gantt"] = gantt_svg(bars, rollout.started_at,
                                     f"/w/{access.workspace_id}/rollouts/{rollout.id}/events/{{id}}")
        context["bar_count"] = len(bars)
    else:
        context["items"] = build_story(session, rollout.id, events)
    return render(request, "rollouts/page.html", context, status_code=status_code)


def _compare_ids(siblings: list[tuple[str, int]], position: int) -> list[str]:
    """Up to four attempts on the task, this one first."""
    ids = [siblings[position][0]] + [rid for i, (rid, _) in enumerate(siblings) if i != position]
    return ids[:4]


def _toggles(params: Any, options: RenderOptions) -> list[dict[str, Any]]:
    current = {k: v for k, v in params.items() if k not in ("md", "code", "latex", "think", "raw", "from")}
    out = []
    for name, label in (("md", "Markdown"), ("code", "Code highlighting"), ("latex", "LaTeX"),
                        ("think", "Think blocks"), ("raw", "Raw JSON")):
        flipped = RenderOptions(**{**options.__dict__, name: not getattr(options, name)})
        out.append({"name": name, "label": label, "on": getattr(options, name),
                    "params": {**current, **flipped.as_query()}})
    return out


@router.get("/w/{workspace_id}/runs/{number}/rollouts/{attempt}")
def rollout_by_attempt(request: Request, number: str, attempt: int, access: WorkspaceAccess, ctx: Ctx) -> Response:
    with ctx.db.reading() as session:
        rollout = rollouts.get_by_attempt(session, access.workspace_id, number, attempt)
        return _page(request, access, ctx, session, rollout)


@router.get("/w/{workspace_id}/rollouts/{rollout_id}")
def rollout_permalink(request: Request, rollout_id: str, access: WorkspaceAccess, ctx: Ctx) -> Response:
    with ctx.db.reading() as session:
        rollout = rollouts.get_rollout(session, access.workspace_id, rollout_id)
        return _page(request, access, ctx, session, rollout)


@router.get("/w/{workspace_id}/rollouts/{rollout_id}/events")
def more_events(request: Request, rollout_id: str, access: WorkspaceAccess, ctx: Ctx) -> Response:
    """The next screen of the flat view (HTMX swaps it in place of the 'more' sentinel)."""
    options = RenderOptions.from_query(request.query_params)
    with ctx.db.reading() as session:
        rollout = rollouts.get_rollout(session, access.workspace_id, rollout_id)
        events, next_cursor = _events(session, rollout, request.query_params.get("cursor"), FLAT_PAGE)
        items = build_story(session, rollout.id, events)
    return render(request, "rollouts/_events.html", {
        "access": access, "rollout": rollout, "items": items, "options": options, "next_cursor": next_cursor,
    }, partial=True)


@router.get("/w/{workspace_id}/rollouts/{rollout_id}/events/{event_id}")
def event_page(request: Request, rollout_id: str, event_id: str, access: WorkspaceAccess, ctx: Ctx) -> Response:
    """One event in full: the whole payload (from the blob store when it was large), rendered and raw."""
    options = RenderOptions.from_query(request.query_params)
    with ctx.db.reading() as session:
        rollout = rollouts.get_rollout(session, access.workspace_id, rollout_id)
        event = RolloutRepository(session).event_by_id(rollout.id, event_id)
        if event is None:
            raise NotFound(f"No event {event_id} in rollout {rollout_id}.")
        full = rollouts.event_out(event, ctx.store, access.workspace_id)
        run = session.get(Run, rollout.run_id)
        items = build_story(session, rollout.id, [event])
    body = full.model_dump(mode="json")
    encoded = orjson.dumps(body, option=orjson.OPT_INDENT_2)
    return render(request, "rollouts/event.html", {
        "access": access, "nav": "traces", "rollout": rollout, "run": run, "event": body, "items": items,
        "options": options, "size": len(encoded), "too_big": len(encoded) > 2_000_000,
    })


@router.post("/w/{workspace_id}/rollouts/{rollout_id}/scores", dependencies=[CsrfChecked])
async def add_score(request: Request, rollout_id: str, access: WorkspaceAccess, ctx: Ctx) -> Response:
    access.require("member")
    form = await request.form()
    name = str(form.get("name") or "").strip()
    data_type = str(form.get("data_type") or "number")
    raw_value = str(form.get("value") or "").strip()
    comment = str(form.get("comment") or "").strip() or None
    problem = None
    value: float | bool | str = raw_value
    if not name:
        problem = "Give the score a name (e.g. reward, correctness, note)."
    elif data_type == "number":
        try:
            value = float(raw_value)
        except ValueError:
            problem = f"A number score needs a number; '{raw_value}' is not one."
    elif data_type == "boolean":
        if raw_value.lower() not in ("true", "false", "1", "0", "yes", "no"):
            problem = "A boolean score is true or false."
        value = raw_value.lower() in ("true", "1", "yes")
    elif data_type not in ("category", "text"):
        problem = "Pick a type: number, boolean, category or text."
    elif not raw_value and data_type == "category":
        problem = "A category score needs a value."
    elif not raw_value:
        value = comment or ""
        if not value:
            problem = "An annotation needs some text (in value or comment)."

    def save() -> str:
        """The score as the API adds it, in one transaction; returns the rollout's handle URL."""
        with ctx.db.transaction() as session:
            rollout = rollouts.get_rollout(session, access.workspace_id, rollout_id, for_update=True)
            body = ScoreIn(name=name[:200], value=value, data_type=data_type, source="human",  # type: ignore[arg-type]
                           comment=comment, author=access.user.email)
            rollouts.add_score(session, access.workspace_id, rollout, body)
            run = runs.resolve_run(session, access.workspace_id, rollout.run_id)
            return f"/w/{access.workspace_id}/runs/{run.number}/rollouts/{rollout.attempt}#scores"

    def refuse(message: str) -> Response:
        # Re-render with the message next to the form (422, so scripts see the refusal too).
        with ctx.db.reading() as session:
            rollout = rollouts.get_rollout(session, access.workspace_id, rollout_id)
            return _page(request, access, ctx, session, rollout, score_error=message, status_code=422)

    if problem is None:
        try:
            target = await run_in_threadpool(save)
        except InvalidInput as error:
            problem = error.detail
    if problem is not None:
        return await run_in_threadpool(refuse, problem)
    flash(request, f"Score '{name}' added.")
    return RedirectResponse(target, status_code=303)


@router.post("/w/{workspace_id}/rollouts/{rollout_id}/promote", dependencies=[CsrfChecked])
async def promote(request: Request, rollout_id: str, access: WorkspaceAccess, ctx: Ctx) -> Response:
    """The rollout becomes a task of a dataset, exactly as POST /api/v1/rollouts/{id}/promote does."""
    access.require("member")
    form = await request.form()
    fields = {"dataset": str(form.get("dataset") or "").strip(), "key": str(form.get("key") or "").strip() or None,
              "use_output_as_expected": bool(form.get("use_output_as_expected")),
              "message": str(form.get("message") or "").strip() or None}

    def save() -> tuple[str, str]:
        with ctx.db.transaction() as session:
            rollout = rollouts.get_rollout(session, access.workspace_id, rollout_id)
            result = promote_rollout(session, access.workspace_id, rollout, PromoteRollout.model_validate(fields))
            return result.dataset, f"Promoted to {result.dataset} (version {result.version}, task {result.keys[0]})."

    def refuse(message: str) -> Response:
        with ctx.db.reading() as session:
            rollout = rollouts.get_rollout(session, access.workspace_id, rollout_id)
            return _page(request, access, ctx, session, rollout, promote_error=message, status_code=422)

    try:
        dataset, message = await run_in_threadpool(save)
    except (InvalidInput, NotFound, Conflict) as error:
        return await run_in_threadpool(refuse, error.detail)
    except ValidationError as error:
        first = error.errors()[0]
        return await run_in_threadpool(refuse, f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}")
    flash(request, message)
    return RedirectResponse(f"/w/{access.workspace_id}/datasets/{quote(dataset, safe='')}", status_code=303)
