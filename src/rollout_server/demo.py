"""Demo content for a newcomer's first look, made through the public REST API like any client would."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

PAPER = """# Attention Is All You Need (abridged notes)

The Transformer replaces recurrence with self-attention. An encoder and a decoder, each a stack of
six layers, use multi-head attention and position-wise feed-forward networks. On WMT 2014
English-to-German it reaches 28.4 BLEU, training in 3.5 days on eight GPUs.
"""


def _ts(start: datetime, ms: float) -> str:
    return (start + timedelta(milliseconds=ms)).isoformat()


async def create_demo_content(client: httpx.AsyncClient) -> dict[str, Any]:
    """A dataset with one task and an attached file, and one finished, scored run over it."""

    async def call(method: str, path: str, **kwargs: Any) -> Any:
        response = await client.request(method, path, **kwargs)
        response.raise_for_status()
        return response.json()

    file = await call("POST", "/api/v1/files", params={"name": "transformer-notes.md"},
                      content=PAPER.encode(), headers={"content-type": "text/markdown"})
    await call("POST", "/api/v1/datasets", json={
        "name": "paper-summary-v1",
        "description": "Summarise a paper in one sentence. (Demo dataset created at first start.)",
        "tasks": [{
            "key": "transformer",
            "instruction": "Summarise the attached paper in one sentence, naming its headline result.",
            "input": {"audience": "ML engineers", "max_words": 40},
            "expected_output": "The Transformer uses only attention and reaches 28.4 BLEU on WMT14 En-De.",
            "files": [file["id"]],
            "split": "test",
        }],
    })
    run = await call("POST", "/api/v1/runs", json={
        "dataset": "paper-summary-v1", "workflow_name": "Paper QA", "group_id": "thread-42",
        "agent_name": "demo-agent", "agent_version": "0.1", "model": "gpt-4o-mini", "params": {"temperature": 0.2},
        "tags": ["demo"],
    })
    tasks = await call("GET", f"/api/v1/runs/{run['id']}/tasks")
    task = tasks["items"][0]["task"]
    rollout = await call("POST", f"/api/v1/runs/{run['id']}/rollouts", json={"task_id": task["id"]})
    start = datetime.now(UTC)
    span_id = f"ev_{uuid.uuid4().hex}"
    call_id = "call_1"
    answer = ("The Transformer drops recurrence for multi-head self-attention and reaches 28.4 BLEU on "
              "WMT 2014 English-to-German.")
    events = [
        {"id": f"ev_{uuid.uuid4().hex}", "kind": "message", "role": "system",
         "content": "You summarise papers for ML engineers.", "started_at": _ts(start, 0)},
        {"id": f"ev_{uuid.uuid4().hex}", "kind": "message", "role": "user",
         "content": task["instruction"], "started_at": _ts(start, 1)},
        {"id": span_id, "kind": "span", "name": "read paper", "started_at": _ts(start, 2),
         "ended_at": _ts(start, 180)},
        {"id": f"ev_{uuid.uuid4().hex}", "kind": "tool_call", "name": "read_file", "call_id": call_id,
         "arguments": {"path": "transformer-notes.md"}, "parent_id": span_id, "started_at": _ts(start, 5)},
        {"id": f"ev_{uuid.uuid4().hex}", "kind": "tool_result", "call_id": call_id, "output": PAPER[:200] + "…",
         "is_error": False, "parent_id": span_id, "started_at": _ts(start, 5), "ended_at": _ts(start, 40)},
        {"id": f"ev_{uuid.uuid4().hex}", "kind": "reasoning",
         "content": "The headline result is the BLEU score; mention attention-only design.",
         "started_at": _ts(start, 200), "ended_at": _ts(start, 350)},
        {"id": f"ev_{uuid.uuid4().hex}", "kind": "llm_call", "model": "gpt-4o-mini", "name": "summarise",
         "input": [{"role": "user", "content": task["instruction"]}],
         "output": [{"role": "assistant", "content": answer}],
         "usage": {"input_tokens": 412, "output_tokens": 38, "total_tokens": 450}, "cost": 0.0000846,
         "started_at": _ts(start, 360), "ended_at": _ts(start, 1210)},
        {"id": f"ev_{uuid.uuid4().hex}", "kind": "message", "role": "assistant", "content": answer,
         "started_at": _ts(start, 1215)},
    ]
    await call("POST", f"/api/v1/rollouts/{rollout['id']}/events", json={"events": events})
    await call("POST", f"/api/v1/rollouts/{rollout['id']}/finish", json={"output": answer})
    await call("POST", f"/api/v1/rollouts/{rollout['id']}/scores",
               json={"name": "reward", "value": 1.0, "source": "demo", "comment": "Names the result and design."})
    await call("POST", f"/api/v1/runs/{run['id']}/finish", json={"status": "finished"})
    return run  # type: ignore[no-any-return]
