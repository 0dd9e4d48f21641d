"""Done-means 2: many threads (and many asyncio tasks) at once; every event stored exactly once, in order."""

from __future__ import annotations

import asyncio
import json
import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import rollout
import rollout.aio
from tests.sdk.helpers import all_events, make_client, raw, run_rollouts, unique

pytestmark = pytest.mark.live

EVENTS = 20


def record(attempt: rollout.AttemptBase, label: str) -> None:
    """Twenty events of mixed kinds, each carrying its expected position."""
    for n in range(EVENTS):
        text = f"{label}#{n}"
        match n % 4:
            case 0:
                attempt.message(text, role="user")
            case 1:
                attempt.log(text)
            case 2:
                attempt.reasoning(text)
            case _:
                attempt.message(text, role="assistant")


def body_text(event: dict[str, Any]) -> str:
    return event.get("content") or event.get("message") or ""


def check_run(live: Any, run_id: str, expected: dict[str, str]) -> None:
    """`expected`: rollout id -> label. Every rollout has its 20 events, once each, in order. The whole run
    is read in one streamed export; a sample is cross-checked through the paged events endpoint."""
    with raw(live) as http:
        stored = run_rollouts(http, run_id)
        assert len(stored) == len(expected)
        assert {r["id"] for r in stored} == set(expected)
        assert all(r["status"] == "succeeded" for r in stored), {r["status"] for r in stored}
        assert all(r["event_count"] == EVENTS for r in stored), sorted({r["event_count"] for r in stored})

        def verify(rollout_id: str, events: list[dict[str, Any]]) -> None:
            label = expected[rollout_id]
            assert [body_text(e) for e in events] == [f"{label}#{n}" for n in range(EVENTS)]
            assert [e["seq"] for e in events] == list(range(1, EVENTS + 1))
            assert len({e["id"] for e in events}) == EVENTS

        exported = 0
        with http.stream("GET", "/exports/rollout", params={"run": run_id}, timeout=120) as response:
            response.raise_for_status()
            for line in response.iter_lines():
                if line.strip():
                    row = json.loads(line)
                    verify(row["ref"]["id"], row["events"])
                    exported += 1
        assert exported == len(expected)
        for rollout_id in random.sample(sorted(expected), 20):
            verify(rollout_id, all_events(http, rollout_id))


def test_32_threads_50_rollouts_20_events(live_server: Any, tmp_path: Path) -> None:
    client = make_client(live_server, tmp_path)
    run = client.start_run(workflow_name=unique("threads"))
    expected: dict[str, str] = {}
    lock = threading.Lock()
    errors: list[BaseException] = []

    def agent(thread: int) -> None:
        try:
            for n in range(50):
                with run.start_rollout(input={"thread": thread, "n": n}) as attempt:
                    label = f"t{thread}-r{n}"
                    with lock:
                        expected[attempt.id] = label
                    record(attempt, label)
        except BaseException as error:  # surfaced below
            errors.append(error)

    threads = [threading.Thread(target=agent, args=(i,)) for i in range(32)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    recorded = time.monotonic()
    assert not errors, errors[:3]
    assert client.flush(timeout=180)
    print(f"recording {recorded - started:.1f} s, flush {time.monotonic() - recorded:.1f} s")
    stats = client._core.sender.stats
    assert stats["sent"] == 32 * 50 * EVENTS and stats["rejected"] == 0 and stats["dropped"] == 0
    checking = time.monotonic()
    check_run(live_server, run.id, expected)
    print(f"checking {time.monotonic() - checking:.1f} s")
    client.close()


def test_async_1000_concurrent_tasks(live_server: Any, tmp_path: Path) -> None:
    async def main() -> dict[str, str]:
        client = rollout.aio.AsyncClient(live_server.base_url, live_server.api_key, spool_dir=tmp_path / "spool")
        run = await client.start_run(workflow_name=unique("asyncio"), load_tasks=False)
        expected: dict[str, str] = {}

        async def agent(n: int) -> None:
            async with run.start_rollout(input={"n": n}) as attempt:
                label = f"a{n}"
                expected[attempt.id] = label
                for k in range(EVENTS):
                    record_one(attempt, label, k)
                    if k % 5 == 0:
                        await asyncio.sleep(0)  # interleave the tasks

        started = time.monotonic()
        await asyncio.gather(*(agent(n) for n in range(1000)))
        recorded = time.monotonic()
        assert await client.flush(timeout=180)
        print(f"recording {recorded - started:.1f} s, flush {time.monotonic() - recorded:.1f} s")
        assert client._core.sender.stats["sent"] == 1000 * EVENTS
        await client.aclose()
        check_run(live_server, run.id, expected)
        return expected

    assert len(asyncio.run(main())) == 1000


def record_one(attempt: rollout.AttemptBase, label: str, n: int) -> None:
    text = f"{label}#{n}"
    if n % 2:
        attempt.log(text)
    else:
        attempt.message(text, role="user")
