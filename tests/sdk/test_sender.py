"""The background sender against a scripted fake server: retries, splitting, refusals, spool adoption."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from rollout._attempt import AttemptBase
from rollout._client import Attempt
from rollout._config import resolve_settings
from rollout._errors import ConflictError, NotFoundError, ServerError
from rollout._http import SyncTransport
from rollout._sender import Sender
from rollout._spool import EVENT, FINISH, LEGACY_FINISH, RUN_FINISH, WireOp, write_segment
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


def accept(request: httpx.Request, finishes: list[str] | None = None) -> dict[str, Any]:
    """The ingest answer: every event and score created; finishes as given (created or duplicate)."""
    body = json.loads(request.content)
    events = body.get("events", [])
    finishes = finishes if finishes is not None else ["created"] * len(body.get("finishes", []))
    return {
        "created": len(events) + len(body.get("scores", [])) + finishes.count("created"),
        "duplicates": finishes.count("duplicate"),
        "rejected": 0,
        "events": [{"index": i, "id": e["id"], "status": "created"} for i, e in enumerate(events)],
        "scores": [],
        "finishes": [
            {"index": i, "id": f["rollout_id"], "status": status}
            for i, (f, status) in enumerate(zip(body.get("finishes", []), finishes, strict=True))
        ],
    }


class Recorder:
    """A fake server: stores events by id (so duplicates show), finishes a rollout once, answers through a
    script."""

    def __init__(self, script: Callable[[httpx.Request, int], httpx.Response | None] | None = None) -> None:
        self.events: dict[str, dict[str, Any]] = {}
        self.received: list[dict[str, Any]] = []
        self.finished: list[str] = []
        self.finish_bodies: list[dict[str, Any]] = []
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
        if request.url.path.endswith("/finish"):  # a run's finish
            return httpx.Response(200, json={"id": request.url.path.split("/")[-2], "status": "finished"})
        body = json.loads(request.content)
        for event in body["events"]:
            self.received.append(event)
            self.events.setdefault(event["id"], event)
        statuses = []
        for finish in body.get("finishes", []):  # applied after the batch's events, as the server does
            if finish["rollout_id"] in self.finished:
                statuses.append("duplicate")
                continue
            statuses.append("created")
            self.finished.append(finish["rollout_id"])
            self.finish_bodies.append(finish)
            self.events_at_finish.append(len(self.events))
        return httpx.Response(200, json=accept(request, statuses))


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


class ReadBack:
    """The client transport a finish(wait=True) reads the finished rollout back with."""

    def request(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        rollout_id = path.split("/")[-1]
        return {"id": rollout_id, "run_id": "run_1", "run_number": 1, "attempt": 1, "status": "succeeded"}


def attempt_with_finish(sender: Sender, rollout_id: str) -> Attempt:
    client = type("FakeClient", (), {"_core": type("Core", (), {"sender": sender})(), "_t": ReadBack()})()
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


def test_finish_rides_in_the_batch_of_its_events_with_the_time_finish_was_called(tmp_path: Path) -> None:
    server = Recorder()
    sender = make_sender(tmp_path, server, flush_interval=0.5)
    attempt = attempt_with_finish(sender, "ro_batch")
    for n in range(3):
        attempt.message(f"m{n}", role="user")
    called = time.time()
    attempt.finish(output="done", metadata={"k": 1})
    time.sleep(0.3)  # the batch lingers: delivery comes later than the call
    assert sender.flush(timeout=10)
    assert server.calls == 1  # events and finish in one request
    assert server.finished == ["ro_batch"] and server.events_at_finish == [3]
    finish = server.finish_bodies[0]
    assert finish["output"] == "done" and finish["metadata"] == {"k": 1} and "body" not in finish
    ended = datetime.fromisoformat(finish["ended_at"]).timestamp()
    assert called <= ended < called + 0.1  # the client's clock at finish(), not the delivery time
    assert sender.stats["finished"] == 1 and sender.stats["sent"] == 3
    sender.close(1)


def test_a_finish_whose_answer_was_lost_is_confirmed_by_the_duplicate_that_follows(tmp_path: Path) -> None:
    bodies: list[dict[str, Any]] = []

    def script(request: httpx.Request, call: int) -> httpx.Response | None:
        bodies.append(json.loads(request.content))
        if call == 1:
            Recorder.__call__(server, request)  # the server stored events and finish...
            raise httpx.ReadTimeout("finished, but the answer was lost")  # ...and the answer never came
        return None

    server = Recorder(script)
    sender = make_sender(tmp_path, server, flush_interval=0.5)  # finish(wait=True) sends at once
    attempt = attempt_with_finish(sender, "ro_9")
    for n in range(3):
        attempt.message(f"m{n}", role="user")
    stored = attempt.finish(output="done", wait=True, timeout=10)
    assert stored is not None and stored.id == "ro_9" and stored.status == "succeeded"  # confirmed, read back
    assert bodies[0] == bodies[-1] and bodies[0]["finishes"]  # the same batch again, finish and all
    assert server.finished == ["ro_9"] and len(server.events) == 3
    sender.close(1)


def test_a_finish_refused_on_its_first_try_raises_for_whoever_waits(tmp_path: Path) -> None:
    server = Recorder()
    sender = make_sender(tmp_path, server)
    server.finished.append("ro_done")  # finished elsewhere already
    with pytest.raises(ConflictError, match="already finished"):
        attempt_with_finish(sender, "ro_done").finish(wait=True, timeout=10)

    def unknown(request: httpx.Request, call: int) -> httpx.Response | None:
        body = json.loads(request.content)
        answer = accept(request, ["created"] * len(body["finishes"]))
        answer["finishes"] = [{"index": 0, "status": "rejected", "error": "No rollout ro_gone in this workspace."}]
        return httpx.Response(200, json=answer)

    other = make_sender(tmp_path / "other", Recorder(unknown))
    with pytest.raises(NotFoundError, match="ro_gone"):
        attempt_with_finish(other, "ro_gone").finish(wait=True, timeout=10)
    sender.close(1)
    other.close(1)


def test_a_conflict_on_ingest_is_a_lost_race_and_is_retried(tmp_path: Path) -> None:
    def script(request: httpx.Request, call: int) -> httpx.Response | None:
        if call == 1:
            return httpx.Response(409, json={"title": "Conflict", "detail": "A concurrent request wrote the same"})
        return None

    server = Recorder(script)
    sender = make_sender(tmp_path, server)
    attempt_with_finish(sender, "ro_race").finish(output=1)
    assert sender.flush(timeout=10)
    assert server.finished == ["ro_race"] and server.calls == 2
    sender.close(1)


def test_a_run_finish_waits_for_the_batches_queued_before_it(tmp_path: Path) -> None:
    order: list[str] = []

    def script(request: httpx.Request, call: int) -> httpx.Response | None:
        body = json.loads(request.content)
        order.append(request.url.path + (f" {len(body['finishes'])} finish" if "finishes" in body else ""))
        return None

    server = Recorder(script)
    sender = make_sender(tmp_path, server, flush_interval=0.5)
    attempt = attempt_with_finish(sender, "ro_1")
    attempt.log("work")
    attempt.finish(output="ok")
    future: Future[Any] = Future()
    sender.enqueue((RUN_FINISH, "run_1", {"status": "finished"}, future))
    attempt_on(sender, "ro_2").log("after the run finish")
    sender.kick()
    assert future.result(10) == {"id": "run_1", "status": "finished"}
    assert sender.flush(timeout=10)
    assert order == ["/api/v1/ingest 1 finish", "/api/v1/runs/run_1/finish", "/api/v1/ingest 0 finish"]
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
    # An older SDK spooled finishes as {"rollout_id", "body"}; this one spools ingest finish items.
    legacy = WireOp(LEGACY_FINISH, json.dumps({"rollout_id": "ro_dead", "body": {"output": "old format"}}))
    current = WireOp(FINISH, json.dumps({"rollout_id": "ro_new", "output": "new", "ended_at": "2026-01-01T00:00:00Z"}))
    write_segment(dead / "000000000002.jsonl", [*events[3:], legacy, current])
    sender.start_if_spool_waiting()
    assert sender.flush(timeout=10)
    assert sorted(server.events) == [f"e{n}" for n in range(5)]
    assert server.finished == ["ro_dead", "ro_new"]
    assert server.finish_bodies == [
        {"rollout_id": "ro_dead", "output": "old format"},
        {"rollout_id": "ro_new", "output": "new", "ended_at": "2026-01-01T00:00:00Z"},
    ]
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


def test_blocking_calls_retry_503_with_retry_after_for_any_method_and_a_conflict_only_when_keyed() -> None:
    answers: list[httpx.Response] = []
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        return answers.pop(0) if answers else httpx.Response(201, json={"ok": True})

    settings = resolve_settings("http://fake", "rk_fake", max_backoff=0.01)
    transport = SyncTransport(
        settings, client=httpx.Client(base_url="http://fake", transport=httpx.MockTransport(handler))
    )
    overloaded = httpx.Response(
        503, headers={"Retry-After": "0"}, json={"title": "Service overloaded", "detail": "busy"}
    )
    answers[:] = [overloaded]
    assert transport.request("POST", "/datasets", json={}) == {"ok": True} and len(seen) == 2  # nothing was done
    answers[:] = [httpx.Response(503, json={"title": "Unavailable", "detail": "?"})]
    with pytest.raises(ServerError):
        transport.request("POST", "/datasets", json={})  # a plain 503 on a non-idempotent write: not repeated
    conflict = httpx.Response(409, json={"title": "Conflict", "detail": "A concurrent request wrote the same key"})
    answers[:] = [conflict]
    with pytest.raises(ConflictError):
        transport.request("POST", "/runs", json={})
    seen.clear()
    answers[:] = [conflict]
    assert transport.request("POST", "/runs", json={"client_key": "k"}, idempotent=True, retry_conflict=True)
    answers[:] = [conflict, conflict]
    with pytest.raises(ConflictError):  # one retry: a second 409 is a real conflict
        transport.request("POST", "/runs", json={"client_key": "k"}, idempotent=True, retry_conflict=True)
    assert len(seen) == 4
