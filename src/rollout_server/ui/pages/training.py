"""The training view of a run whose rollouts carry a step: steps in a sidebar, groups of samples that
share a prompt with colour-coded dots, a Discarded tab, and metric charts over steps with EMA."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from ...api.deps import Ctx
from ...datasets.repository import DatasetRepository
from ...rollouts import service as rollouts
from ...rollouts.repository import RolloutRepository
from ...runs import service as runs
from ..deps import WorkspaceAccess
from ..templating import render, reward_class
from ..views import Series, advantages, ema, finite, line_chart_svg

router = APIRouter()

STEP_LIMIT = 2000
MAX_OVERLAY = 4


def _alpha(value: str | None) -> float:
    try:
        smoothing = float(value) if value else 0.6
    except ValueError:
        smoothing = 0.6
    smoothing = min(0.99, max(0.0, smoothing))
    return 1.0 - smoothing


def _scale(value: float | None, low: float, high: float) -> str:
    return reward_class(value, low, high)


@router.get("/w/{workspace_id}/runs/{number}/training")
def training(request: Request, number: str, access: WorkspaceAccess, ctx: Ctx) -> Response:
    params = request.query_params
    tab = "discarded" if params.get("tab") == "discarded" else "samples"
    smoothing = params.get("smooth") or "0.6"
    alpha = _alpha(smoothing)
    overlay_refs = [r for r in (params.get("compare") or "").replace(",", " ").split() if r][:MAX_OVERLAY]
    with ctx.db.reading() as session:
        run = runs.resolve_run(session, access.workspace_id, number)
        repo = RolloutRepository(session)
        steps = repo.step_summaries(run.id)
        step_numbers = [s["step"] for s in steps]
        try:
            raw_step = params.get("step")
            step = int(raw_step) if raw_step else (step_numbers[-1] if step_numbers else None)
        except ValueError:
            step = step_numbers[-1] if step_numbers else None
        rows = repo.list_for_run(run.id, step=step, limit=STEP_LIMIT) if step is not None else []
        items = rollouts.rollouts_out(session, rows, "")
        scores = repo.scores_of([r.id for r in rows])
        task_ids = [r.task_id for r in rows if r.task_id]
        tasks = DatasetRepository(session).get_tasks(task_ids)
        overlays = []
        for ref in overlay_refs:
            try:
                other = runs.resolve_run(session, access.workspace_id, ref)
            except Exception:  # an unknown run in the overlay list is ignored, not an error page
                continue
            if other.id != run.id:
                overlays.append((other, repo.step_summaries(other.id)))
        all_rewards = finite(s["min_reward"] for s in steps) + finite(s["max_reward"] for s in steps)
    low = min(all_rewards) if all_rewards else 0.0
    high = max(all_rewards) if all_rewards else 1.0
    if low >= 0.0 and high <= 1.0:
        low, high = 0.0, 1.0
    metric_names = sorted({s.name for values in scores.values() for s in values
                           if s.numeric_value is not None and s.name != run.reward_score})
    metric_ranges: dict[str, tuple[float, float]] = {}
    for name in metric_names:
        values = [s.numeric_value for v in scores.values() for s in v if s.name == name and s.numeric_value is not None]
        metric_ranges[name] = (min(values), max(values)) if values else (0.0, 1.0)  # type: ignore[type-var]
    adv = advantages({i.id: i.reward for i in items}, {i.id: i.group_key or i.task_id or i.id for i in items})
    adv.update({r.id: r.advantage for r in rows if getattr(r, "advantage", None) is not None})
    token_values = [i.total_tokens for i in items] or [0]
    tmin, tmax = min(token_values), max(token_values)
    kept = [i for i in items if not i.discarded]
    dropped = [i for i in items if i.discarded]
    groups: dict[str, list[Any]] = defaultdict(list)
    for item in kept:
        groups[item.group_key or item.task_key or item.id].append(item)
    group_list = []
    for key, members in groups.items():
        first = members[0]
        task = tasks.get(first.task_id) if first.task_id else None
        prompt = task.instruction if task else first.input
        rewards = [m.reward for m in members if m.reward is not None]
        group_list.append({"key": key, "members": members, "prompt": prompt,
                           "golden": task.expected_output if task else None,
                           "mean_reward": sum(rewards) / len(rewards) if rewards else None})

    def series(label: str, summaries: list[dict[str, Any]], field: str, css: str, link: str | None) -> Series:
        points = [(float(s["step"]), s[field]) for s in summaries]
        return Series(label=label, points=points, smoothed=ema([p[1] for p in points], alpha), css=css, link=link)

    base_link = f"/w/{access.workspace_id}/runs/{run.number}/training?step={{x}}"
    for s in steps:
        s["discard_rate"] = s["discarded"] / s["count"] if s["count"] else None
    for _, summaries in overlays:
        for s in summaries:
            s["discard_rate"] = s["discarded"] / s["count"] if s["count"] else None
    charts = []
    for field, title in (("mean_reward", "Mean reward"), ("mean_tokens", "Mean tokens per sample"),
                         ("discard_rate", "Discarded fraction")):
        lines = [series(f"run {run.number}", steps, field, "s0", base_link)]
        for index, (other, summaries) in enumerate(overlays, start=1):
            lines.append(series(f"run {other.number}", summaries, field, f"s{index}",
                                f"/w/{access.workspace_id}/runs/{other.number}/training?step={{x}}"))
        charts.append(line_chart_svg(f"{title} (EMA smoothing {smoothing})", lines))
    dots = {}
    for item in items:
        item_scores = {s.name: s.numeric_value for s in scores.get(item.id, []) if s.numeric_value is not None}
        dots[item.id] = {
            "reward": _scale(item.reward, low, high),
            "advantage": _scale(adv.get(item.id), -2.0, 2.0),
            "tokens": _scale(item.total_tokens, tmin, tmax),
            "metrics": {name: (item_scores.get(name), _scale(item_scores.get(name), *metric_ranges[name]))
                        for name in metric_names},
        }
    return render(request, "training/page.html", {
        "access": access, "nav": "runs", "run": run, "steps": steps, "step": step, "tab": tab,
        "groups": group_list, "dropped": dropped, "dots": dots, "advantages": adv, "metric_names": metric_names,
        "charts": charts, "smoothing": smoothing, "compare": " ".join(overlay_refs), "reward_range": (low, high),
        "state": dict(params), "kept_count": len(kept),
    })
