"""Small API helpers for scoring and export tests."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

from tests.api.factories import create_dataset, finish_rollout, start_rollout, start_run


async def make_run(client: httpx.AsyncClient, *, tasks: int, repeats: int, scorers: list[dict[str, Any]] | None = None,
                   output: Any = None, name: str | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A dataset of `tasks` tasks (expected output `answer-<i>`) with `scorers` on it, a run with `repeats` per
    task, and every rollout finished — even attempts with the right answer, odd ones with a wrong one."""
    dataset = await create_dataset(client, name=name, tasks=[
        {"key": f"t{i:03d}", "instruction": f"Say answer-{i}", "expected_output": f"answer-{i}"} for i in range(tasks)
    ])
    for scorer in scorers or []:
        response = await client.post("/api/v1/scorers", json={"dataset": dataset["id"], **scorer})
        assert response.status_code == 201, response.text
    run = await start_run(client, dataset, num_repeats=repeats)
    rollouts = []
    for task in dataset["tasks"]:
        for repeat in range(repeats):
            rollout = await start_rollout(client, run["id"], task["id"], repeat_index=repeat)
            index = int(task["key"][1:])
            answer = output if output is not None else (f"answer-{index}" if repeat % 2 == 0 else "no idea")
            rollouts.append(await finish_rollout(client, rollout["id"], output=answer))
    return run, rollouts


async def wait_scored(client: httpx.AsyncClient, run: str | int, timeout: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        status = (await client.get(f"/api/v1/runs/{run}/scoring")).json()
        if status["total"] and status["queued"] == 0 and status["running"] == 0:
            return status
        if time.monotonic() > deadline:
            raise AssertionError(f"scoring did not finish: {status}")
        await asyncio.sleep(0.05)
