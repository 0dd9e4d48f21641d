"""Background scoring: scorers configured on a dataset run when rollouts finish, in a worker; a failing scorer
leaves a visible error and never blocks the others; retries; on-demand scoring of a past run."""

from __future__ import annotations

from collections import Counter

from sqlalchemy import func, select

from rollout_server.context import AppContext
from rollout_server.models import Job
from rollout_server.scoring.worker import Worker
from tests.api.factories import finish_rollout, start_rollout
from tests.conftest import Tenant
from tests.scoring.helpers import make_run, wait_scored

THREE = [
    {"name": "correct", "type": "exact_match", "config": {"score_name": "reward"}},
    {"name": "mentions", "type": "contains", "config": {"value": "answer"}},
    {"name": "size", "type": "length", "config": {"min": 1, "max": 100}},
]


async def test_a_hundred_rollouts_three_scorers_and_a_broken_one(api: Tenant, worker: Worker,
                                                                 ctx: AppContext) -> None:
    ctx.settings.scoring_max_attempts = 2
    worker.start()
    scorers = [*THREE, {"name": "boom", "type": "boom"}]
    run, rollouts = await make_run(api.client, tasks=10, repeats=10, scorers=scorers)
    assert len(rollouts) == 100

    status = await wait_scored(api.client, run["id"])
    assert status["done"] == 0 and status["failed"] == 100 and status["errors"] == 100

    names: Counter[str] = Counter()
    for rollout in rollouts:
        detail = (await api.client.get(f"/api/v1/rollouts/{rollout['id']}", params={"events_limit": 0})).json()
        good = [s for s in detail["scores"] if s["data_type"] != "error"]
        errors = [s for s in detail["scores"] if s["data_type"] == "error"]
        names.update(s["name"] for s in good)
        assert {s["source"] for s in good} == {"correct", "mentions", "size"}
        assert len(errors) == 1 and errors[0]["source"] == "boom"
        assert "the boom scorer always fails" in errors[0]["value"]
        assert errors[0]["comment"] == "attempt 2 of 2; final"
        correct = rollout["repeat_index"] % 2 == 0
        assert detail["reward"] == (1.0 if correct else 0.0)
    assert names == {"reward": 100, "mentions": 100, "size": 100}  # all 300 scores

    listed = (await api.client.get(f"/api/v1/runs/{run['id']}/scorer-errors", params={"limit": 30})).json()
    assert len(listed["items"]) == 30 and listed["next_cursor"]
    assert listed["items"][0]["scorer"] == "boom" and listed["items"][0]["attempt"] == 1
    rest = (await api.client.get(f"/api/v1/runs/{run['id']}/scorer-errors",
                                 params={"cursor": listed["next_cursor"], "limit": 1000})).json()
    assert len(rest["items"]) == 70

    metrics = (await api.client.get(f"/api/v1/runs/{run['number']}/metrics")).json()
    assert metrics["scores"]["reward"]["mean"] == 0.5 and metrics["scores"]["reward"]["count"] == 100
    assert metrics["scores"]["reward"]["std"] == 0.5
    assert metrics["scores"]["mentions"]["mean"] == 0.5
    assert metrics["reward"] == {"count": 100, "mean": 0.5, "std": 0.5, "min": 0.0, "max": 1.0}
    assert metrics["errors"] == {"boom": 100}


async def test_retries_with_backoff_then_the_score_replaces_the_error(api: Tenant, worker: Worker,
                                                                      ctx: AppContext) -> None:
    ctx.settings.scoring_max_attempts = 3
    run, rollouts = await make_run(api.client, tasks=2, repeats=1, scorers=[
        {"name": "flaky", "type": "flaky", "config": {"fail_times": 3}}])
    worker.run_once()
    detail = (await api.client.get(f"/api/v1/rollouts/{rollouts[0]['id']}")).json()
    assert [s["data_type"] for s in detail["scores"]] == ["error"]  # visible while it retries
    assert detail["scores"][0]["comment"] == "attempt 1 of 3; will retry"
    assert "ConnectionError: flaky failure 1" in detail["scores"][0]["value"]
    worker.drain()
    for rollout in rollouts:
        scores = (await api.client.get(f"/api/v1/rollouts/{rollout['id']}/scores")).json()["items"]
        assert [(s["name"], s["value"], s["source"]) for s in scores] == [("flaky", 3.0, "flaky")]
    with ctx.db.reading() as session:
        attempts = session.scalars(select(Job.attempts).where(Job.run_id == run["id"])).all()
    assert attempts == [3, 3]


async def test_score_a_past_run_on_demand_with_configured_and_inline_scorers(api: Tenant, worker: Worker) -> None:
    run, rollouts = await make_run(api.client, tasks=3, repeats=2)  # no scorers yet: nothing queued
    assert (await api.client.get(f"/api/v1/runs/{run['id']}/scoring")).json()["total"] == 0

    response = await api.client.post(f"/api/v1/runs/{run['number']}/score", json={})
    assert response.status_code == 422 and response.json()["errors"][0]["field"] == "scorers"

    response = await api.client.post("/api/v1/scorers", json={"run": str(run["number"]), **THREE[0]})
    assert response.status_code == 201
    response = await api.client.post(f"/api/v1/runs/{run['number']}/score", json={
        "inline": [{"name": "chars", "type": "answer_length", "config": {"scale": 1}}]})
    assert response.status_code == 202 and response.json()["enqueued"] == 6
    worker.drain()
    scores = (await api.client.get(f"/api/v1/rollouts/{rollouts[0]['id']}/scores")).json()["items"]
    assert [(s["name"], s["value"]) for s in scores] == [("chars", 8.0)]  # only the inline one ran

    response = await api.client.post(f"/api/v1/runs/{run['id']}/score", json={"scorers": ["correct"]})
    assert response.json()["enqueued"] == 6
    worker.drain()
    response = await api.client.post(f"/api/v1/runs/{run['id']}/score", json={})  # all configured, again
    worker.drain()
    scores = (await api.client.get(f"/api/v1/rollouts/{rollouts[1]['id']}/scores")).json()["items"]
    assert sorted((s["name"], s["value"]) for s in scores) == [("chars", 7.0), ("reward", False)]
    detail = (await api.client.get(f"/api/v1/rollouts/{rollouts[0]['id']}")).json()
    assert detail["reward"] == 1.0

    response = await api.client.post(f"/api/v1/runs/{run['id']}/score", json={"scorers": ["nope"]})
    assert response.status_code == 422 and "nope" in response.json()["detail"]
    response = await api.client.post(f"/api/v1/runs/{run['id']}/score", json={
        "inline": [{"name": "bad", "type": "regex", "config": {"pattern": "("}}]})
    assert response.status_code == 422 and response.json()["errors"][0]["field"] == "inline.0.config.pattern"


async def test_a_rollout_finishing_without_scorers_queues_nothing(api: Tenant, ctx: AppContext) -> None:
    run, _ = await make_run(api.client, tasks=2, repeats=1)
    rollout = await start_rollout(api.client, run["id"])
    await finish_rollout(api.client, rollout["id"], output="x")
    with ctx.db.reading() as session:
        assert session.scalar(select(func.count()).select_from(Job)) == 0
