"""A 10,000-event rollout: the first screen holds one page of events and a cursor for the next, each
following page arrives on its own (HTMX swaps it in), and no response ships megabytes."""

from __future__ import annotations

import re
import time
import uuid
from typing import Any

import httpx

from tests.ui.conftest import World, api_caller

EVENTS = 10_000


async def make_long_rollout(world: World, events: int = EVENTS) -> dict[str, Any]:
    call = api_caller(world.api)
    run = await call("POST", "/api/v1/runs", json={"workflow_name": "long agent"})
    rollout = await call("POST", f"/api/v1/runs/{run['id']}/rollouts", json={"input": {"goal": "long"}})
    batch: list[dict[str, Any]] = []
    for index in range(events):
        kind = index % 4
        if kind == 0:
            event = {"id": f"e{index}", "kind": "message", "role": "assistant", "content": f"Step {index}: thinking"}
        elif kind == 1:
            event = {"id": f"e{index}", "kind": "tool_call", "name": "shell", "call_id": f"c{index}",
                     "arguments": {"cmd": f"ls {index}"}}
        elif kind == 2:
            event = {"id": f"e{index}", "kind": "tool_result", "call_id": f"c{index - 1}", "output": f"file{index}"}
        else:
            event = {"id": f"e{index}", "kind": "llm_call", "model": "m", "usage": {"input_tokens": 10,
                                                                                   "output_tokens": 2}}
        batch.append(event)
        if len(batch) == 1000:
            await call("POST", f"/api/v1/rollouts/{rollout['id']}/events", json={"events": batch})
            batch = []
    await call("POST", f"/api/v1/rollouts/{rollout['id']}/finish", json={"output": "done " + uuid.uuid4().hex})
    return {"run": run, "rollout": rollout}


NEXT = re.compile(r'hx-get="(/w/[^"]+/events\?[^"]*cursor=[^"&]+[^"]*)"')


async def test_first_screen_is_one_page_and_the_rest_comes_page_by_page(world: World,
                                                                        owner: httpx.AsyncClient) -> None:
    made = await make_long_rollout(world)
    ws, number = world.workspace_id, made["run"]["number"]
    started = time.perf_counter()
    first = await owner.get(f"/w/{ws}/runs/{number}/rollouts/1")
    elapsed = time.perf_counter() - started
    assert first.status_code == 200
    assert len(first.content) < 250_000, len(first.content)
    assert elapsed < 5.0
    assert first.text.count('<article class="ev') == 75  # 100 events: 25 tool results sit beside their calls
    assert "Step 0: thinking" in first.text and "Step 100:" not in first.text
    assert "file2" in first.text  # a tool call with its result
    url = NEXT.search(first.text)
    assert url, "no next-page sentinel"
    pages, seen, last = 1, 75, first
    while url and pages < 4:
        response = await owner.get(url.group(1).replace("&amp;", "&"), headers={"HX-Request": "true"})
        assert response.status_code == 200
        assert "<html" not in response.text  # a fragment, swapped in place of the sentinel
        assert len(response.content) < 250_000
        seen += response.text.count('<article class="ev')
        pages += 1
        last = response
        url = NEXT.search(response.text)
    assert f"Step {100 * (pages - 1)}: thinking" in last.text
    assert seen == 75 * pages


async def test_tool_result_on_the_next_page_is_shown_with_its_call(world: World, owner: httpx.AsyncClient) -> None:
    # 99 messages, then a call as event 100 (last of page 1) and its result as event 101 (page 2).
    call = api_caller(world.api)
    run = await call("POST", "/api/v1/runs", json={})
    rollout = await call("POST", f"/api/v1/runs/{run['id']}/rollouts", json={})
    events = [{"id": f"m{i}", "kind": "message", "role": "user", "content": f"m{i}"} for i in range(99)]
    events += [{"id": "call", "kind": "tool_call", "name": "grep", "call_id": "c1", "arguments": {}},
               {"id": "result", "kind": "tool_result", "call_id": "c1", "output": "FOUND-IT"},
               {"id": "after", "kind": "message", "role": "assistant", "content": "after"}]
    await call("POST", f"/api/v1/rollouts/{rollout['id']}/events", json={"events": events})
    first = await owner.get(f"/w/{world.workspace_id}/rollouts/{rollout['id']}")
    assert "FOUND-IT" in first.text
    url = NEXT.search(first.text)
    assert url
    second = await owner.get(url.group(1).replace("&amp;", "&"))
    assert "FOUND-IT" not in second.text and "after" in second.text  # not shown twice
