"""The background sender against a scripted fake server: retries, splitting, refusals, spool adoption."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from rollout._attempt import AttemptBase
from rollout._client import Attempt
from rollout._config import resolve_settings
from rollout._sender import Sender
from rollout._spool import EVENT, FINISH, WireOp, write_segment
from rollout._types import Rollout

Handler = Callable[[httpx.Request], httpx.Response]


def make_sender(tmp_path: Path, handler: Handler, **options: Any) -> Sender:
    options.setdefault("retry_window", 5.0)
    options.setdefault("max_backoff", 0.05)
    options.setdefault("flush_interval", 0.01)
    settings = resolve_settings("http://fake", "rk_fake", spool_dir=tmp_path / "spool", **options)
    sender = Sender(settings)
    sender._http = httpx.Client(base_url="http://fake", transport=httpx.MockTransport(handler))
    return sender


def attempt_on(sender: Sender, rollout_id: str = "ro_1") -> AttemptBase:
    return AttemptBase(sender, Rollout(id=rollout_id, run_id="run_1", run_number=1, attempt=1))


def accept(request: httpx.Request) -> dict[str, Any]:
    body = json.loads(request.content)
    events = body.get("events", [])
    return {
        "created": len(events) + len(body.get("scores", [])),
        "duplicates": 0,
        "rejected": 0,
        "events": [{"index": i, "id": e["id"], "status": "created"} for i, e in enumerate(events)],
        "scores": [],
    }


class Recorder:
    """A fake server: stores events by id (so duplicates show), answers through a script."""

    def __init__(self, script: Callable[[httpx.Request, int], httpx.Response | None] | None = None) -> None:
        self.events: dict[str, dict[str, Any]] = {}
        self.received: list[dict[str, Any]] = []
        self.finished: list[str] = []
        self.events_at_finish: list[int] = []
        self.calls = 0
        self.lock = threading.Lock()
        self.script = script

    def __call__(self, request: httpx.Request) -> httpx.Response:
        with self.lock:
            self.calls += 1
            call = self.calls
        if self.script is not None:
            scripted = self.script(request, call)
            if scripted is not None:
                return scripted
        if request.url.path.endswith("/finish"):
            self.finished.append(request.url.path.split("/")[-2])
            self.events_at_finish.append(len(self.events))
            return httpx.Response(
                200,
                json={
                    "id": request.url.path.split("/")[-2],
                    "run_id": "run_1",
                    "run_number": 1,
                    "attempt": 1,
                    "status": "succeeded",
                },
            )
        body = json.loads(request.content)
        for event in body["events"]:
            self.received.append(event)
            self.events.setdefault(event["id"], event)
        return httpx.Response(200, json=accept(request))


def test_retries_5xx_and_429_then_delivers_once(tmp_path: Path) -> None:
    def script(request: httpx.Request, call: int) -> httpx.Response | None:
        if call == 1:
            return httpx.Response(503, json={"title": "Unavailable", "detail": "busy"})
        if call == 2:
            return httpx.Response(429, headers={"retry-after": "0.05"}, json={"title": "Slow down"})
        return None

    server = Recorder(script)
    sender = make_sender(tmp_path, server)
    attempt = attempt_on(sender)
    for n in range(10):
        attempt.message(f"m{n}", role="user")
    assert sender.flush(timeout=10)
    assert [e["content"] for e in sorted(server.events.values(), key=lambda e: e["seq"])] == [
        f"m{n}" for n in range(10)
    ]
    assert server.calls == 3
    sender.close(1)


def test_connection_error_on_a_committed_batch_is_resent_and_deduplicated(tmp_path: Path) -> None:
    def script(request: httpx.Request, call: int) -> httpx.Response | None:
        if call == 1:
            Recorder.__call__(server, request)  # the server stored it...
            raise httpx.ReadError("connection reset")  # ...but the answer never arrived
        return None

    server = Recorder(script)
    sender = make_sender(tmp_path, server)
    attempt = attempt_on(sender)
    for n in range(5):
        attempt.log(f"line {n}")
    assert sender.flush(timeout=10)
    assert len(server.received) == 10 and len(server.events) == 5  # sent twice, same ids: stored once
    sender.close(1)


def test_scores_carry_client_ids_so_a_resend_counts_once(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []

    def script(request: httpx.Request, call: int) -> httpx.Response | None:
        seen.extend(json.loads(request.content)["scores"])
        if call == 1:
            raise httpx.ReadError("answer lost")
        return None

    sender = make_sender(tmp_path, Recorder(script))
    attempt = attempt_on(sender)
    attempt.score("reward", 0.5, comment="ok")
    attempt.score("reward", 1.0)
    assert sender.flush(timeout=10)
    assert len(seen) == 4 and seen[0]["id"] == seen[2]["id"] != seen[1]["id"]
    assert seen[0] == {
        "id": seen[0]["id"],
        "rollout_id": "ro_1",
        "name": "reward",
        "value": 0.5,
        "source": "sdk",
        "comment": "ok",
    }
    sender.close(1)


def test_one_invalid_event_does_not_sink_the_batch(tmp_path: Path) -> None:
    def script(request: httpx.Request, call: int) -> httpx.Response | None:
        if request.url.path.endswith("/ingest"):
            body = json.loads(request.content)
            if any(e.get("role") == "robot" for e in body["events"]):
                return httpx.Response(
                    422,
                    json={
                        "title": "Invalid input",
                        "detail": "Field 'events.3': role",
                        "errors": [{"field": "events.3", "message": "bad role"}],
                    },
                )
        return None

    server = Recorder(script)
    sender = make_sender(tmp_path, server)
    attempt = attempt_on(sender)
    for n in range(40):
        attempt.message(f"m{n}", role="robot" if n == 17 else "user")
    assert sender.flush(timeout=10)
    assert sorted(e["content"] for e in server.events.values()) == sorted(f"m{n}" for n in range(40) if n != 17)
    assert sender.stats["rejected"] == 1
    sender.close(1)


def test_payload_too_large_splits_the_batch(tmp_path: Path) -> None:
    def script(request: httpx.Request, call: int) -> httpx.Response | None:
        if request.url.path.endswith("/ingest") and len(request.content) > 20_000:
            return httpx.Response(413, json={"title": "Payload too large", "detail": "split it"})
        return None

    server = Recorder(script)
    sender = make_sender(tmp_path, server)
    attempt = attempt_on(sender)
    for n in range(100):
        attempt.message("x" * 1000 + str(n), role="user")
    assert sender.flush(timeout=10)
    assert len(server.events) == 100
    sender.close(1)


def test_an_event_over_the_request_limit_becomes_a_log_event(tmp_path: Path) -> None:
    server = Recorder()
    sender = make_sender(tmp_path, server, batch_max_bytes=10_000)
    attempt = attempt_on(sender)
    attempt.message("small", role="user")
    attempt.message("y" * 50_000, role="assistant")
    assert sender.flush(timeout=10)
    replaced = sorted(server.events.values(), key=lambda e: e["seq"])[1]
    assert replaced["kind"] == "log" and "dropped by the SDK" in replaced["message"]
    assert replaced["metadata"] == {"original_kind": "message", "original_size": replaced["metadata"]["original_size"]}
    sender.close(1)


def attempt_with_finish(sender: Sender, rollout_id: str) -> Attempt:
    client = type("FakeClient", (), {"_core": type("Core", (), {"sender": sender})()})()
    return Attempt(client, Rollout(id=rollout_id, run_id="run_1", run_number=1, attempt=1))  # type: ignore[arg-type]


def test_full_queue_spills_to_disk_and_keeps_the_order(tmp_path: Path) -> None:
    up = threading.Event()

    def script(request: httpx.Request, call: int) -> httpx.Response | None:
        if not up.is_set():
            raise httpx.ConnectError("connection refused")
        return None

    server = Recorder(script)
    sender = make_sender(tmp_path, server, max_queue_size=100, retry_window=0.05, max_backoff=0.2)
    attempt = attempt_with_finish(sender, "ro_spill")
    started = time.perf_counter()
    for n in range(2000):
        attempt.log(f"line {n}")
    attempt.finish(output="done")
    elapsed = time.perf_counter() - started
    assert sender.stats["spooled"] >= 1900  # the queue holds 100: the rest went to disk
    assert elapsed < 5  # the agent never waited for the network
    assert not sender.flush(timeout=0.3)
    up.set()
    assert sender.flush(timeout=20)
    ordered = sorted(server.events.values(), key=lambda e: e["seq"])
    assert [e["message"] for e in ordered] == [f"line {n}" for n in range(2000)]
    assert server.finished == ["ro_spill"] and server.events_at_finish == [2000]  # finish after every event
    assert not list(sender._spool.root.rglob("*.jsonl"))
    sender.close(1)


def test_finish_goes_after_its_events_and_a_409_on_retry_is_success(tmp_path: Path) -> None:
    order: list[str] = []

    def script(request: httpx.Request, call: int) -> httpx.Response | None:
        order.append(request.url.path)
        if request.url.path.endswith("/finish"):
            if order.count(request.url.path) == 1:
                raise httpx.ReadTimeout("finished, but the answer was lost")
            return httpx.Response(409, json={"title": "Conflict", "detail": "already succeeded"})
        return None

    server = Recorder(script)
    sender = make_sender(tmp_path, server)
    attempt = attempt_with_finish(sender, "ro_9")
    for n in range(3):
        attempt.message(f"m{n}", role="user")
    assert attempt.finish(output="done", wait=True, timeout=10) is None  # confirmed, no error
    assert order[0] == "/api/v1/ingest" and order[1:] == ["/api/v1/rollouts/ro_9/finish"] * 2
    sender.close(1)


def test_items_the_server_rejects_are_not_retried(tmp_path: Path) -> None:
    def script(request: httpx.Request, call: int) -> httpx.Response | None:
        body = json.loads(request.content)
        return httpx.Response(
            200,
            json={
                "created": 0,
                "duplicates": 0,
                "rejected": len(body["events"]),
                "events": [
                    {"index": i, "id": e["id"], "status": "rejected", "error": "rollout ro_1 is already succeeded"}
                    for i, e in enumerate(body["events"])
                ],
            },
        )

    server = Recorder(script)
    sender = make_sender(tmp_path, server)
    attempt_on(sender).log("too late")
    assert sender.flush(timeout=10)
    assert server.calls == 1 and sender.stats["rejected"] == 1
    sender.close(1)


def test_unencodable_values_never_raise(tmp_path: Path) -> None:
    server = Recorder()
    sender = make_sender(tmp_path, server)
    attempt = attempt_on(sender)
    loop: list[Any] = []
    loop.append(loop)
    attempt.llm_call(
        "gpt-4o",
        input={"lock": threading.Lock(), "nan": float("nan"), "loop": loop},
        output=object(),
        usage={"prompt_tokens": 10, "completion_tokens": 5},
    )
    attempt.message(b"\x00bytes", role="user")
    assert sender.flush(timeout=10)
    call, message = sorted(server.events.values(), key=lambda e: e["seq"])
    assert call["input"]["nan"] is None and "lock" in call["input"]["lock"]
    assert call["usage"] == {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
    assert call["cost"] == pytest.approx((10 * 2.5 + 5 * 10) / 1e6)
    assert message["content"] == {"_bytes_base64": "AGJ5dGVz"}
    sender.close(1)


def test_spool_left_by_a_dead_process_is_adopted_and_delivered(tmp_path: Path) -> None:
    server = Recorder()
    sender = make_sender(tmp_path, server)
    root = sender._spool.root
    dead = root / "1700000000-99999-deadbeef"
    dead.mkdir(parents=True)
    (root / "1700000000-99999-deadbeef.lock").touch()  # nobody holds it: its process is gone
    events = [
        WireOp(
            EVENT,
            json.dumps(
                {"rollout_id": "ro_dead", "id": f"e{n}", "kind": "log", "seq": n + 1, "message": f"left behind {n}"}
            ),
        )
        for n in range(5)
    ]
    write_segment(dead / "000000000001.jsonl", events[:3])
    write_segment(
        dead / "000000000002.jsonl", [*events[3:], WireOp(FINISH, json.dumps({"rollout_id": "ro_dead", "body": {}}))]
    )
    sender.start_if_spool_waiting()
    assert sender.flush(timeout=10)
    assert sorted(server.events) == [f"e{n}" for n in range(5)]
    assert server.finished == ["ro_dead"]
    assert not dead.exists() and not (root / "1700000000-99999-deadbeef.lock").exists()
    sender.close(1)


def test_a_live_writers_spool_is_left_alone(tmp_path: Path) -> None:
    server = Recorder(lambda request, call: httpx.Response(503))  # nothing gets through
    first = make_sender(tmp_path, server, retry_window=0.05)
    attempt_on(first).log("kept")
    assert not first.flush(timeout=0.5)
    assert list(first._spool.folder.glob("*.jsonl"))
    other = Recorder()
    second = make_sender(tmp_path, other)
    second.start_if_spool_waiting()
    time.sleep(0.3)
    assert second.flush(timeout=2)
    assert other.events == {}  # first is alive and holds its lock: not adopted
    second.close(1)
    first._stopping = True
    first.close(0.2)
