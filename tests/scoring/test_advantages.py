"""Advantages against an independent numpy reference for the three normalisations, and the discards that
come with them (zero-variance groups, errored rollouts), kept apart from manual discards."""

from __future__ import annotations

import random

import numpy as np
import pytest

from tests.api.factories import add_score, create_dataset, finish_rollout, start_rollout, start_run
from tests.conftest import Tenant


async def _scored_run(api: Tenant) -> tuple[dict, dict[str, dict]]:
    rng = random.Random(7)
    dataset = await create_dataset(api.client, with_file=False, tasks=[
        {"key": f"k{i}", "instruction": f"task {i}"} for i in range(5)])
    run = await start_run(api.client, dataset, num_repeats=4)
    rollouts: dict[str, dict] = {}
    for index, task in enumerate(dataset["tasks"]):
        for repeat in range(4):
            rollout = await start_rollout(api.client, run["id"], task["id"], repeat_index=repeat)
            if index == 4 and repeat == 3:
                await finish_rollout(api.client, rollout["id"], status="errored", error="sandbox died")
                rollouts[rollout["id"]] = {"task": index, "reward": None, "status": "errored"}
                continue
            await finish_rollout(api.client, rollout["id"], output="x")
            reward = 1.0 if index == 3 else round(rng.uniform(0, 1), 3)  # task k3: every reward the same
            await add_score(api.client, rollout["id"], "reward", reward)
            rollouts[rollout["id"]] = {"task": index, "reward": reward, "status": "succeeded"}
    # An explicit group key spanning tasks, in its own run step.
    for reward in (0.0, 0.5, 1.0):
        rollout = await start_rollout(api.client, run["id"], group_key="shared-prompt", step=2)
        await finish_rollout(api.client, rollout["id"], output="y")
        await add_score(api.client, rollout["id"], "reward", reward)
        rollouts[rollout["id"]] = {"task": "shared-prompt", "reward": reward, "status": "succeeded"}
    return run, rollouts


def reference(rollouts: dict[str, dict], normalization: str, eps: float = 1e-6) -> dict[str, float]:
    groups: dict[object, list[str]] = {}
    for rid, info in rollouts.items():
        if info["reward"] is not None:
            groups.setdefault(info["task"], []).append(rid)
    every = np.array([rollouts[r]["reward"] for ids in groups.values() for r in ids], dtype=float)
    out = {}
    for ids in groups.values():
        rewards = np.array([rollouts[r]["reward"] for r in ids], dtype=float)
        centred = rewards - rewards.mean()
        if normalization == "grpo":
            values = centred / (rewards.std(ddof=1) + eps)
        elif normalization == "batch":
            values = centred / (every.std(ddof=1) + eps)
        else:
            values = centred
        out.update(dict(zip(ids, values.tolist(), strict=True)))
    return out


@pytest.mark.parametrize("normalization", ["grpo", "dr_grpo", "batch"])
async def test_advantages_match_numpy(api: Tenant, normalization: str) -> None:
    run, rollouts = await _scored_run(api)
    response = await api.client.post(f"/api/v1/runs/{run['number']}/advantages",
                                     json={"normalization": normalization})
    assert response.status_code == 200, response.text
    summary = response.json()
    assert summary["groups"] == 6 and summary["scored"] == 22
    assert summary["discarded_zero_variance"] == 4 and summary["discarded_errored"] == 1

    expected = reference(rollouts, normalization)
    items = (await api.client.get("/api/v1/rollouts", params={"run": run["id"], "limit": 100})).json()["items"]
    assert len(items) == 23
    for item in items:
        info = rollouts[item["id"]]
        if info["reward"] is None:
            assert item["advantage"] is None
            assert item["discarded"] and item["discard_reason"] == "rollout errored"
            continue
        assert item["advantage"] == pytest.approx(expected[item["id"]], abs=1e-9)
        flat = info["task"] == 3
        assert item["discarded"] is flat
        assert item["discard_reason"] == ("zero reward variance in group" if flat else None)


async def test_manual_discards_survive_recomputation(api: Tenant) -> None:
    run, rollouts = await _scored_run(api)
    chosen = next(rid for rid, info in rollouts.items() if info["task"] == 0)
    response = await api.client.post(f"/api/v1/rollouts/{chosen}/discard", json={"reason": "reward hacking"})
    assert response.json() == {"id": chosen, "discarded": True, "discard_reason": "reward hacking"}
    await api.client.post(f"/api/v1/runs/{run['id']}/advantages", json={"discard_zero_variance": False})
    await api.client.post(f"/api/v1/runs/{run['id']}/advantages", json={})
    detail = (await api.client.get(f"/api/v1/rollouts/{chosen}")).json()
    assert detail["discarded"] and detail["discard_reason"] == "reward hacking" and detail["advantage"] is None
    remaining = [rid for rid, info in rollouts.items() if info["task"] == 0 and rid != chosen]
    rewards = np.array([rollouts[r]["reward"] for r in remaining])
    first = (await api.client.get(f"/api/v1/rollouts/{remaining[0]}")).json()
    assert first["advantage"] == pytest.approx((rewards[0] - rewards.mean()) / (rewards.std(ddof=1) + 1e-6))

    undone = await api.client.post(f"/api/v1/rollouts/{chosen}/discard", json={"discarded": False})
    assert undone.json()["discarded"] is False

    metrics = (await api.client.get(f"/api/v1/runs/{run['id']}/metrics")).json()
    assert metrics["discarded_count"] == 5
    assert metrics["advantage"]["count"] == 21
    kept = (await api.client.get(f"/api/v1/runs/{run['id']}/metrics", params={"include_discarded": False})).json()
    assert kept["rollout_count"] == 23 - 5
