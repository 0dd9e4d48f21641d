"""Traces, the landing page: rollouts across runs, newest first, filtered and grouped; state in the URL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from ...api.deps import Ctx
from ...common.pagination import decode_cursor
from ...datasets import service as datasets
from ...datasets.repository import DatasetRepository
from ...errors import InvalidInput, NotFound
from ...models.rollout import ROLLOUT_STATUSES
from ...rollouts import service as rollouts
from ...runs.repository import RunRepository
from ..deps import WorkspaceAccess
from ..templating import render

router = APIRouter()

SINCE = {"1h": timedelta(hours=1), "24h": timedelta(days=1), "7d": timedelta(days=7), "30d": timedelta(days=30)}
PAGE_SIZE = 50


def _float(value: str | None, name: str, problems: list[str]) -> float | None:
    if value in (None, ""):
        return None
    try:
        return float(value)  # type: ignore[arg-type]
    except ValueError:
        problems.append(f"{name} must be a number, not '{value}'.")
        return None


def _time(value: str | None, name: str, problems: list[str]) -> datetime | None:
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        problems.append(f"{name} must be a date and time like 2026-11-26T14:00, not '{value}'.")
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def parse_filters(params: Any, session: Any, workspace_id: str) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """Query parameters → (service filters, the state echoed into the form and links, problems)."""
    problems: list[str] = []
    state: dict[str, Any] = {
        "status": [s for s in params.getlist("status") if s in ROLLOUT_STATUSES],
        "workflow": params.get("workflow") or "", "dataset": params.get("dataset") or "",
        "agent": params.get("agent") or "", "model": params.get("model") or "", "run": params.get("run") or "",
        "group_id": params.get("group_id") or "", "since": params.get("since") or "",
        "from": params.get("from") or "", "to": params.get("to") or "", "reward_min": params.get("reward_min") or "",
        "reward_max": params.get("reward_max") or "", "q": (params.get("q") or "").strip(),
        "group": params.get("group") or "",
    }
    filters: dict[str, Any] = {
        "statuses": state["status"] or None, "workflow_name": state["workflow"] or None,
        "agent_name": state["agent"] or None, "model": state["model"] or None, "group_id": state["group_id"] or None,
        "reward_min": _float(state["reward_min"], "Reward from", problems),
        "reward_max": _float(state["reward_max"], "Reward to", problems), "search": state["q"] or None,
        "started_after": _time(state["from"], "From", problems), "started_before": _time(state["to"], "To", problems),
    }
    if state["since"] in SINCE:
        filters["started_after"] = datetime.now(UTC) - SINCE[state["since"]]
    if state["dataset"]:
        try:
            filters["dataset_id"] = datasets.resolve_dataset(session, workspace_id, state["dataset"]).id
        except NotFound:
            problems.append(f"No dataset '{state['dataset']}' in this workspace.")
            filters["dataset_id"] = "-"
    if state["run"]:
        filters["run"] = state["run"]
    return filters, state, problems


@router.get("/w/{workspace_id}/traces")
def traces(request: Request, access: WorkspaceAccess, ctx: Ctx) -> Response:
    params = request.query_params
    cursor = params.get("cursor") or None
    with ctx.db.reading() as session:
        filters, state, problems = parse_filters(params, session, access.workspace_id)
        groups: list[dict[str, Any]] | None = None
        items: list[Any] = []
        next_cursor = None
        runs: dict[str, Any] = {}
        try:
            if state["group"]:
                groups = rollouts.trace_groups(session, access.workspace_id, filters=dict(filters),
                                               group_by=state["group"])
            else:
                if cursor:
                    decode_cursor(cursor, 2)
                page = rollouts.list_rollouts(session, access.workspace_id, filters=dict(filters), cursor=cursor,
                                              limit=PAGE_SIZE, base_url="")
                items, next_cursor = page.items, page.next_cursor
                runs = RunRepository(session).get_many(access.workspace_id, [r.run_id for r in items])
        except (InvalidInput, NotFound) as error:
            problems.append(error.detail)
        run_repo = RunRepository(session)
        choices = {
            "workflow": run_repo.distinct_values(access.workspace_id, "workflow_name"),
            "agent": run_repo.distinct_values(access.workspace_id, "agent_name"),
            "model": run_repo.distinct_values(access.workspace_id, "model"),
            "dataset": [d.name for d in DatasetRepository(session).list_page(access.workspace_id, after_name=None,
                                                                             limit=200, search=None)],
        }
    context = {
        "access": access, "nav": "traces", "state": state, "items": items, "groups": groups, "runs": runs,
        "next_cursor": next_cursor, "cursor": cursor, "problems": problems, "choices": choices,
        "statuses": ROLLOUT_STATUSES, "since_options": list(SINCE), "group_options": rollouts.GROUP_BY,
    }
    if request.headers.get("hx-request") and request.headers.get("hx-target") == "traces-results":
        return render(request, "traces/_results.html", context)
    return render(request, "traces/page.html", context)
