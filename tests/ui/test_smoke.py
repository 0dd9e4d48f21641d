"""Every page renders for a signed-in member, on SQLite and PostgreSQL."""

from __future__ import annotations

import httpx

from tests.ui.conftest import World
from tests.ui.seed import Seeded


async def test_pages_render(world: World, seeded: Seeded, owner: httpx.AsyncClient) -> None:
    ws = world.workspace_id
    rid = seeded.rollout_ids[0]
    paths = [
        f"/w/{ws}/traces", f"/w/{ws}/traces?group=workflow", f"/w/{ws}/traces?group=status&q=BLEU",
        f"/w/{ws}/runs", f"/w/{ws}/runs/{seeded.eval_run}", f"/w/{ws}/runs/{seeded.eval_run}?view=tasks",
        f"/w/{ws}/runs/{seeded.eval_run}/rollouts/1", f"/w/{ws}/runs/{seeded.eval_run}/rollouts/1?view=gantt",
        f"/w/{ws}/rollouts/{rid}", f"/w/{ws}/rollouts/{rid}?raw=1", f"/w/{ws}/rollouts/{rid}?md=0&think=0",
        f"/w/{ws}/compare?ids={seeded.rollout_ids[0]}&ids={seeded.rollout_ids[1]}",
        f"/w/{ws}/runs/{seeded.training_run}/training", f"/w/{ws}/runs/{seeded.training_run}/training?tab=discarded&step=1",
        f"/w/{ws}/datasets", f"/w/{ws}/datasets/{seeded.dataset_id}", f"/w/{ws}/datasets/{seeded.dataset_id}/tasks/paper-1",
        f"/w/{ws}/datasets/{seeded.dataset_id}/new-task", f"/w/{ws}/datasets/{seeded.dataset_id}/tasks/paper-1/edit",
        f"/w/{ws}/datasets/{seeded.dataset_id}/diff", f"/w/{ws}/datasets/{seeded.dataset_id}/diff?from=0&to=1",
        f"/w/{ws}/settings", f"/w/{ws}/runs/{seeded.prod_run}/rollouts/1",
    ]
    for path in paths:
        response = await owner.get(path)
        assert response.status_code == 200, f"{path}: {response.status_code}\n{response.text[:3000]}"
        assert "content-security-policy" in response.headers


async def test_group_statistics_agree_on_both_databases(world: World, seeded: Seeded) -> None:
    """Nearest-rank percentiles: PostgreSQL's percentile_disc and SQLite's window function give the same rows."""
    from rollout_server.rollouts import service

    with world.ctx.db.reading() as session:
        groups = service.trace_groups(session, world.workspace_id, filters={}, group_by="workflow")
    by_name = {g["key"]: g for g in groups}
    paper = by_name["Paper QA"]
    assert paper["count"] == 6 and paper["succeeded"] == 5 and paper["finished"] == 6
    assert abs(paper["mean_reward"] - (1.0 + 0.4 + 1.0 + 1.0 + 0.4) / 5) < 1e-9
    assert paper["tokens"] == 6 * 460
    latencies = sorted(r["latency_ms"] for r in (await world.api.get(
        "/api/v1/rollouts", params={"workflow_name": "Paper QA"})).json()["items"])
    assert paper["latency_p50_ms"] == latencies[2]  # nearest rank: ceil(0.5 * 6) = 3rd
    assert paper["latency_p95_ms"] == latencies[5]
