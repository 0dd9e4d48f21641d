"""Done-means 3: nothing is lost when the server goes away mid-run, or when the agent's process is killed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.sdk.helpers import all_events, make_client, raw, unique

pytestmark = pytest.mark.live

OUTAGE_SECONDS = 10.0


def test_server_down_for_10_seconds_mid_run(live_server_factory: Callable[..., Any], tmp_path: Path) -> None:
    live = live_server_factory()
    client = make_client(live, tmp_path, retry_window=1.0, max_backoff=1.0, flush_interval=0.05)
    run = client.start_run(workflow_name=unique("outage"))
    attempts = [run.start_rollout(input={"agent": n}) for n in range(8)]
    produced = [0] * len(attempts)
    stop = threading.Event()

    def agent(index: int) -> None:
        attempt = attempts[index]
        while not stop.is_set():
            attempt.message(f"{index}:{produced[index]}", role="assistant")
            produced[index] += 1
            time.sleep(0.05)

    threads = [threading.Thread(target=agent, args=(i,)) for i in range(len(attempts))]
    for thread in threads:
        thread.start()
    time.sleep(1.5)
    live.server.kill()  # a crash, not a polite shutdown: a batch may be committed but never acknowledged
    down_at = time.monotonic()
    time.sleep(OUTAGE_SECONDS)
    spooled_during_outage = client._core.sender.stats["spooled"]
    live.server.start()
    outage = time.monotonic() - down_at
    print(f"outage {outage:.1f} s (restart included)")
    time.sleep(1.5)
    stop.set()
    for thread in threads:
        thread.join()
    for attempt in attempts:
        attempt.finish(output={"events": produced[attempts.index(attempt)]})
    flush_started = time.monotonic()
    assert client.flush(timeout=60), client._core.sender.stats
    print(f"flush {time.monotonic() - flush_started:.1f} s, {sum(produced)} events, {client._core.sender.stats}")

    assert outage >= OUTAGE_SECONDS
    assert spooled_during_outage > 0  # the outage really went through the spool
    with raw(live) as http:
        for index, attempt in enumerate(attempts):
            events = all_events(http, attempt.id)
            assert [e["content"] for e in events] == [f"{index}:{n}" for n in range(produced[index])]
            assert [e["seq"] for e in events] == list(range(1, produced[index] + 1))
            detail = http.get(f"/rollouts/{attempt.id}", params={"events_limit": 0}).json()
            assert detail["status"] == "succeeded" and detail["event_count"] == produced[index]
    assert sum(produced) > 8 * 150  # events kept flowing through the outage
    assert not list((tmp_path / "spool").rglob("*.jsonl"))  # the spool is empty again
    client.close()


CHILD = textwrap.dedent(
    """
    import json, sys, time
    import rollout

    base_url, api_key, spool = sys.argv[1:4]
    client = rollout.Client(base_url, api_key, spool_dir=spool, retry_window=0.3, max_backoff=0.5)
    run = client.start_run(workflow_name="killed-agent")
    attempts = [run.start_rollout(input={"n": n}) for n in range(3)]
    print(json.dumps({"run": run.id, "rollouts": [a.id for a in attempts]}), flush=True)
    sys.stdin.readline()  # the parent stops the server, then tells us to go on
    for n, attempt in enumerate(attempts):
        with attempt.span("work"):
            for k in range(50):
                attempt.message(f"{n}:{k}", role="user")
        attempt.score("reward", n / 2)
        attempt.finish(output={"n": n})
    delivered = client.flush(timeout=3)
    print(json.dumps({"delivered": delivered, "stats": client._core.sender.stats}), flush=True)
    time.sleep(3600)  # killed here
    """
)

NEXT = textwrap.dedent(
    """
    import json, sys
    import rollout

    base_url, api_key, spool = sys.argv[1:4]
    client = rollout.Client(base_url, api_key, spool_dir=spool)
    delivered = client.flush(timeout=60)
    print(json.dumps({"delivered": delivered, "stats": client._core.sender.stats}), flush=True)
    """
)


def test_killed_process_is_delivered_by_the_next_one(live_server_factory: Callable[..., Any], tmp_path: Path) -> None:
    live = live_server_factory()
    spool = tmp_path / "spool"
    args = [live.base_url, live.api_key, str(spool)]
    env = {**os.environ, "ROLLOUT_CONFIG_FILE": str(tmp_path / "none.json")}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert child.stdout is not None and child.stdin is not None
        started = json.loads(child.stdout.readline())
        live.server.stop()
        child.stdin.write("go\n")
        child.stdin.flush()
        report = json.loads(child.stdout.readline())
        assert report["delivered"] is False
        assert report["stats"]["spooled"] == 3 * 51 + 3 + 3  # messages and spans, scores, finishes
        assert list(spool.rglob("*.jsonl")), "the queued events should be on disk"
        os.kill(child.pid, signal.SIGKILL)  # no atexit, no goodbye
        child.wait(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()

    live.server.start()
    done = subprocess.run([sys.executable, "-c", NEXT, *args], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["delivered"] is True
    assert result["stats"]["sent"] == 3 * 51 + 3  # events and scores created
    assert not list(spool.rglob("*.jsonl"))

    with raw(live) as http:
        for n, rollout_id in enumerate(started["rollouts"]):
            events = all_events(http, rollout_id)
            span = events[0]
            assert span["kind"] == "span" and span["name"] == "work"
            messages = [e for e in events if e["kind"] == "message"]
            assert [e["content"] for e in messages] == [f"{n}:{k}" for k in range(50)]
            assert all(e["parent_id"] == span["id"] for e in messages)
            detail = http.get(f"/rollouts/{rollout_id}").json()
            assert detail["status"] == "succeeded" and detail["output"] == {"n": n}
            assert [(s["name"], s["value"]) for s in detail["scores"]] == [("reward", n / 2)]
