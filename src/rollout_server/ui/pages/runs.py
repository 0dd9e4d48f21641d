"""Runs: the list, and a run's page — aggregates, reward histogram, the rollout table (sortable,
filterable), grouping by task with group-relative advantage, and the re-run-the-failed-tasks panel."""

from __future__ import annotations

import json
import shlex
from collections import defaultdict
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from ...api.deps import Ctx
from ...datasets.repository import DatasetRepository
from ...rollouts import service as rollouts
from ...rollouts.repository import RolloutRepository
from ...runs import service as runs
from ...runs.repository import RunRepository
from ..deps import WorkspaceAccess
from ..templating import render
from ..views import advantages, histogram, histogram_svg

router = APIRouter()

SORTS = ("attempt", "task", "status", "reward", "latency", "tokens", "cost")
TABLE_LIMIT = 200
GROUPED_LIMIT = 5000


@router.get("/w/{workspace_id}/runs")
def run_list(request: Request, access: WorkspaceAccess, ctx: Ctx) -> Response:
    params = request.query_params
    filters: dict[str, Any] = {"status": params.get("status") or None,
                               "workflow_name": params.get("workflow") or None, "dataset": params.get("dataset")}
    with ctx.db.reading() as session:
        page = runs.list_runs(session, access.workspace_id, filters=filters, cursor=params.get("cursor") or None,
                              limit=50, base_url="")
        aggregates = {r.id: runs.aggregates(session, RunRepository(session).get(access.workspace_id, r.id))  # type: ignore[arg-type]
                      for r in page.items}
    return render(request, "runs/list.html", {"access": access, "nav": "runs", "runs": page.items,
                                              "aggregates": aggregates, "next_cursor": page.next_cursor,
                                              "state": {k: v for k, v in params.items() if k != "cursor"}})


def rerun_commands(run: Any, failed: int) -> dict[str, str]:
    dataset = run.dataset_name or run.dataset_id or ""
    return {
        "sdk": f"run = rollout.start_run({json.dumps(dataset)}, only_failed_from={run.number})",
        "cli": f"rollout runs start {shlex.quote(dataset)} --only-failed-from {run.number}",
        "failed": str(failed),
    }


@router.get("/w/{workspace_id}/runs/{number}")
def run_page(request: Request, number: str, access: WorkspaceAccess, ctx: Ctx) -> Response:
    params = request.query_params
    view = params.get("view") if params.get("view") in ("table", "tasks") else "table"
    sort = str(params.get("sort")) if params.get("sort") in SORTS else "attempt"
    descending = params.get("dir") == "desc"
    status = params.get("status") or None
    search = (params.get("q") or "").strip() or None
    with ctx.db.reading() as session:
        run = runs.resolve_run(session, access.workspace_id, number)
        detail = runs.run_detail(session, run, "")
        repo = RolloutRepository(session)
        reward_groups = repo.reward_groups(run.id)
        rewards = [reward for _, _, reward in reward_groups if reward is not None]
        limit = GROUPED_LIMIT if view == "tasks" else TABLE_LIMIT
        rows = repo.list_for_run(run.id, status=status, search=search, order=sort, descending=descending,
                                 limit=limit + 1)
        truncated = len(rows) > limit
        items = rollouts.rollouts_out(session, rows[:limit], "")
        has_steps = repo.has_steps(run.id)
        failed_tasks = repo.failed_task_count(run.id)
        dataset = DatasetRepository(session).get(access.workspace_id, run.dataset_id) if run.dataset_id else None
    groups: dict[str, list[Any]] = defaultdict(list)
    for item in items:
        groups[item.task_id or item.group_key or item.id].append(item)
    adv = advantages({rid: reward for rid, _, reward in reward_groups}, {rid: group for rid, group, _ in reward_groups})
    # Advantages the scoring job stored (its normalisation and groups) win over the ones computed here.
    adv.update({r.id: r.advantage for r in rows if getattr(r, "advantage", None) is not None})
    task_groups = []
    for key, members in groups.items():
        scored = [m.reward for m in members if m.reward is not None]
        task_groups.append({
            "key": key, "task_key": members[0].task_key or members[0].group_key or "(ad hoc)", "members": members,
            "mean_reward": sum(scored) / len(scored) if scored else None,
            "succeeded": sum(1 for m in members if m.status == "succeeded"),
        })
    task_groups.sort(key=lambda g: (g["mean_reward"] is None, g["mean_reward"] or 0.0, g["task_key"]))
    state = {k: v for k, v in params.items()}
    context = {
        "access": access, "nav": "runs", "run": detail, "items": items, "truncated": truncated, "view": view,
        "sort": sort, "descending": descending, "state": state, "histogram": histogram_svg(histogram(rewards)),
        "task_groups": task_groups, "advantages": adv, "has_steps": has_steps,
        "rerun": rerun_commands(detail, failed_tasks) if detail.dataset_id else None,
        "failed_task_count": failed_tasks, "dataset": dataset,
    }
    if request.headers.get("hx-request") and request.headers.get("hx-target") == "run-rollouts":
        return render(request, "runs/_rollouts.html", context)
    return render(request, "runs/page.html", context)
