"""A real server process (SQLite) drains the scoring queue itself: a rollout finished through the API gets its
scores without any separate worker."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from tests.conftest import Live

pytestmark = pytest.mark.live


def test_server_scores_finished_rollouts_in_the_background(live_server_factory: Callable[..., Live]) -> None:
    live = live_server_factory(ROLLOUT_WORKER_POLL_SECONDS="0.1")
    with live.client() as client:
        dataset = client.post("/api/v1/datasets", json={"name": "live-scoring", "tasks": [
            {"key": "q1", "instruction": "Say yes", "expected_output": "yes"}]}).json()
        scorer = client.post("/api/v1/scorers", json={"dataset": "live-scoring", "name": "correct",
                                                      "type": "normalized_match", "config": {"score_name": "reward"}})
        assert scorer.status_code == 201, scorer.text
        run = client.post("/api/v1/runs", json={"dataset": dataset["id"], "num_repeats": 2}).json()
        task_id = client.get(f"/api/v1/runs/{run['id']}/tasks").json()["items"][0]["task"]["id"]
        ids = []
        for answer in ("Yes.", "no"):
            rollout = client.post(f"/api/v1/runs/{run['id']}/rollouts", json={"task_id": task_id}).json()
            assert client.post(f"/api/v1/rollouts/{rollout['id']}/finish", json={"output": answer}).status_code == 200
            ids.append(rollout["id"])
        deadline = time.monotonic() + 30
        while client.get(f"/api/v1/runs/{run['id']}/scoring").json()["done"] < 2:
            assert time.monotonic() < deadline, client.get(f"/api/v1/runs/{run['id']}/scoring").json()
            time.sleep(0.1)
        rewards = [client.get(f"/api/v1/rollouts/{rid}").json()["reward"] for rid in ids]
        assert rewards == [1.0, 0.0]
        metrics = client.get(f"/api/v1/runs/{run['number']}/metrics").json()
        assert metrics["reward"]["mean"] == 0.5 and metrics["scoring"]["done"] == 2
