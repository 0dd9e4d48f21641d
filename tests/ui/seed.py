"""Test data for the UI, made through the public REST API exactly as an SDK would: a dataset with a file,
an evaluation run with several attempts per task (successes, failures, tool calls, reasoning, markdown,
LaTeX and think blocks), an ad-hoc production run, and a training run with steps, groups and discards."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

Call = Callable[..., Awaitable[Any]]

ANSWER = """The paper shows **attention is all you need**: BLEU 28.4 on WMT14.

```python
def score(x):
    return x * 2  # doubled
```

Energy is $E = mc^2$, and $$\\sum_{i=1}^n i = \\frac{n(n+1)}{2}$$

<think>I should double-check the BLEU number.</think>
Done."""


def _id() -> str:
    return f"ev_{uuid.uuid4().hex}"


def _ts(start: datetime, ms: float) -> str:
    return (start + timedelta(milliseconds=ms)).isoformat()


@dataclass
class Seeded:
    dataset_id: str
    dataset_name: str
    eval_run: int
    prod_run: int
    training_run: int
    rollout_ids: list[str] = field(default_factory=list)
    failed_rollout_id: str = ""
    first_attempt: int = 1


def story_events(start: datetime, *, fail: bool, answer: str = ANSWER) -> list[dict[str, Any]]:
    span = _id()
    call_id = f"call_{uuid.uuid4().hex[:8]}"
    events: list[dict[str, Any]] = [
        {"id": _id(), "kind": "message", "role": "system", "content": "You are a careful research assistant.",
         "started_at": _ts(start, 0)},
        {"id": _id(), "kind": "message", "role": "user", "content": "Summarise the paper in one sentence.",
         "started_at": _ts(start, 2)},
        {"id": span, "kind": "span", "name": "research", "started_at": _ts(start, 5), "ended_at": _ts(start, 900)},
        {"id": _id(), "kind": "tool_call", "name": "search_papers", "call_id": call_id, "parent_id": span,
         "arguments": {"query": "transformer attention", "limit": 3}, "started_at": _ts(start, 10)},
        {"id": _id(), "kind": "tool_result", "call_id": call_id, "parent_id": span, "is_error": fail,
         "output": "rate limited: 429" if fail else "Found: Attention Is All You Need (2017)",
         "started_at": _ts(start, 12), "ended_at": _ts(start, 320)},
        {"id": _id(), "kind": "reasoning", "parent_id": span, "content": "The user wants one sentence; cite BLEU.",
         "started_at": _ts(start, 330), "ended_at": _ts(start, 420)},
        {"id": _id(), "kind": "llm_call", "name": "summarise", "model": "gpt-test", "parent_id": span,
         "input": [{"role": "user", "content": "Summarise."}], "output": [{"role": "assistant", "content": answer}],
         "usage": {"input_tokens": 400, "output_tokens": 60}, "cost": 0.0012,
         "started_at": _ts(start, 430), "ended_at": _ts(start, 890)},
    ]
    if fail:
        events.append({"id": _id(), "kind": "error", "message": "Tool search_papers failed: rate limited",
                       "started_at": _ts(start, 895)})
    else:
        events.append({"id": _id(), "kind": "message", "role": "assistant", "content": answer,
                       "started_at": _ts(start, 905)})
    return events


async def seed(call: Call, *, prefix: str = "") -> Seeded:
    """`call(method, path, json=..., content=..., params=..., headers=...)` returns the response's JSON."""
    name = f"{prefix}qa-demo-{uuid.uuid4().hex[:6]}"
    notes = await call("POST", "/api/v1/files", params={"name": "paper-notes.md"},
                       content=b"# Notes\nAttention only.\n", headers={"content-type": "text/markdown"})
    tasks = [
        {"key": "paper-1", "instruction": "Summarise the **attached** paper.", "input": {"max_words": 40},
         "expected_output": "Attention-only model, 28.4 BLEU.", "files": [notes["id"]]},
        {"key": "paper-2", "instruction": "Name the dataset used.", "input": {"max_words": 10},
         "expected_output": "WMT 2014"},
        {"key": "paper-3", "instruction": "Give the training time.", "expected_output": "3.5 days"},
    ]
    dataset = await call("POST", "/api/v1/datasets", json={"name": name, "tasks": tasks,
                                                            "description": "Questions about one paper."})
    run = await call("POST", "/api/v1/runs", json={
        "dataset": name, "workflow_name": "Paper QA", "agent_name": "agent-a", "agent_version": "1.2",
        "model": "gpt-test", "params": {"temperature": 0.3}, "tags": ["eval"], "num_repeats": 2,
        "group_id": "thread-42"})
    listed = await call("GET", f"/api/v1/runs/{run['id']}/tasks", params={"limit": 100})
    seeded = Seeded(dataset_id=dataset["id"], dataset_name=name, eval_run=run["number"], prod_run=0,
                    training_run=0)
    start = datetime.now(UTC) - timedelta(minutes=5)
    for index, item in enumerate(listed["items"]):
        task = item["task"]
        rollout = await call("POST", f"/api/v1/runs/{run['id']}/rollouts",
                             json={"task_id": task["id"], "repeat_index": item["repeat_index"]})
        fail = task["key"] == "paper-2" and item["repeat_index"] == 1
        answer = ANSWER if index % 2 == 0 else ANSWER.replace("28.4", "27.9")
        await call("POST", f"/api/v1/rollouts/{rollout['id']}/events",
                   json={"events": story_events(start + timedelta(seconds=index), fail=fail, answer=answer)})
        if fail:
            await call("POST", f"/api/v1/rollouts/{rollout['id']}/finish",
                       json={"status": "failed", "error": "search_papers: rate limited (429)"})
            seeded.failed_rollout_id = rollout["id"]
        else:
            await call("POST", f"/api/v1/rollouts/{rollout['id']}/finish", json={"output": answer})
            await call("POST", f"/api/v1/rollouts/{rollout['id']}/scores",
                       json={"name": "reward", "value": 1.0 if index % 2 == 0 else 0.4, "source": "sdk"})
        seeded.rollout_ids.append(rollout["id"])
    await call("POST", f"/api/v1/runs/{run['id']}/finish", json={"status": "finished"})

    prod = await call("POST", "/api/v1/runs", json={"workflow_name": "Support bot", "agent_name": "agent-b",
                                                     "model": "gpt-small"})
    seeded.prod_run = prod["number"]
    for index in range(3):
        rollout = await call("POST", f"/api/v1/runs/{prod['id']}/rollouts",
                             json={"input": {"ticket": f"Printer {index} is on fire"}})
        await call("POST", f"/api/v1/rollouts/{rollout['id']}/events", json={"events": [
            {"id": _id(), "kind": "message", "role": "user", "content": f"Printer {index} is on fire"},
            {"id": _id(), "kind": "message", "role": "assistant", "content": "Please unplug it."}]})
        await call("POST", f"/api/v1/rollouts/{rollout['id']}/finish",
                   json={"output": "Please unplug it." if index else "Refund issued", "status":
                         "succeeded" if index else "errored", "error": None if index else "escalation timeout"})

    training = await call("POST", "/api/v1/runs", json={"workflow_name": "GRPO math", "agent_name": "policy",
                                                         "model": "tiny-7b"})
    seeded.training_run = training["number"]
    for step in range(4):
        for group in range(2):
            for sample in range(3):
                rollout = await call("POST", f"/api/v1/runs/{training['id']}/rollouts", json={
                    "input": {"problem": f"What is {group} + {step}?"}, "step": step, "group_key": f"prompt-{group}"})
                correct = (sample + step + group) % 3 != 0
                await call("POST", f"/api/v1/rollouts/{rollout['id']}/events", json={"events": [
                    {"id": _id(), "kind": "llm_call", "model": "tiny-7b",
                     "usage": {"input_tokens": 50, "output_tokens": 20 + 10 * sample}, "cost": 0.0001}]})
                await call("POST", f"/api/v1/rollouts/{rollout['id']}/finish",
                           json={"output": f"<think>add them</think>The answer is {group + step if correct else 0}."})
                await call("POST", "/api/v1/ingest", json={"scores": [
                    {"rollout_id": rollout["id"], "name": "reward", "value": (0.2 + 0.2 * step) if correct else 0.0},
                    {"rollout_id": rollout["id"], "name": "format", "value": 1.0 if sample else 0.5}]})
    return seeded


DiscardHook = Callable[[list[str], str], Awaitable[None]]


async def training_ids(call: Call, run_number: int) -> list[dict[str, Any]]:
    page = await call("GET", "/api/v1/rollouts", params={"run": str(run_number), "limit": 1000})
    return list(page["items"])
