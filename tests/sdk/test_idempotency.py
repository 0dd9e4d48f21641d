"""Against a live server: starts carry a client_key, so a start retried after a lost answer creates one run
or rollout; finishes ride in ingest batches and keep the time finish() was called."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

import rollout
import rollout.aio
from tests.sdk.helpers import make_client, raw, run_rollouts, unique

pytestmark = pytest.mark.live


def creates(request: httpx.Request) -> bool:
    path = request.url.path
    return request.method == "POST" and (path == "/api/v1/runs" or path.endswith("/rollouts"))


class DropFirstAnswer(httpx.BaseTransport):
    """Lets each create reach the server, then drops the connection before the first answer arrives."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner
        self.dropped: list[str] = []
        self.keys: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        if creates(request):
            self.keys.append(json.loads(request.content)["client_key"])
            if request.url.path not in self.dropped:
                response.read()  # the server committed it...
                response.close()
                self.dropped.append(request.url.path)  # ...and the answer never reaches the client
                raise httpx.RemoteProtocolError("Server disconnected without sending a response.", request=request)
        return response


class AsyncDropFirstAnswer(httpx.AsyncBaseTransport):
    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner
        self.dropped: list[str] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        if creates(request) and request.url.path not in self.dropped:
            await response.aread()
            await response.aclose()
            self.dropped.append(request.url.path)
            raise httpx.RemoteProtocolError("Server disconnected without sending a response.", request=request)
        return response


def runs_named(live: Any, workflow: str) -> list[dict[str, Any]]:
    with raw(live) as http:
        response = http.get("/runs", params={"workflow_name": workflow})
        response.raise_for_status()
        return response.json()["items"]  # type: ignore[no-any-return]


def test_a_start_retried_after_a_dropped_connection_creates_one_run_and_one_rollout(
    live_server: Any, tmp_path: Path
) -> None:
    client = make_client(live_server, tmp_path, max_backoff=0.1)
    transport = DropFirstAnswer(client._t.client._transport)
    client._t.client._transport = transport
    workflow = unique("dropped")
    run = client.start_run(workflow_name=workflow)
    attempt = run.start_rollout(input={"n": 1})
    attempt.finish(output="ok", wait=True)
    assert transport.dropped == ["/api/v1/runs", f"/api/v1/runs/{run.id}/rollouts"]
    # Each call sent its key twice (the try whose answer was lost, then the retry); the two calls differ.
    assert len(transport.keys) == 4 and transport.keys[0] == transport.keys[1] != transport.keys[2] == transport.keys[3]
    assert [r["id"] for r in runs_named(live_server, workflow)] == [run.id]
    with raw(live_server) as http:
        stored = run_rollouts(http, run.id)
    assert [(r["id"], r["attempt"], r["status"]) for r in stored] == [(attempt.id, 1, "succeeded")]
    client.close()


def test_async_starts_retried_after_a_dropped_connection_create_one_each(live_server: Any, tmp_path: Path) -> None:
    workflow = unique("dropped-async")

    async def main() -> tuple[str, str, list[str]]:
        client = rollout.aio.AsyncClient(
            live_server.base_url, live_server.api_key, spool_dir=tmp_path / "spool", max_backoff=0.1
        )
        transport = AsyncDropFirstAnswer(httpx.AsyncHTTPTransport())
        client._t._given = httpx.AsyncClient(
            base_url=live_server.base_url,
            headers={"authorization": f"Bearer {live_server.api_key}"},
            transport=transport,
        )
        run = await client.start_run(workflow_name=workflow, load_tasks=False)
        attempt = await run.start_rollout(input={"n": 1})
        attempt.log("hello")
        stored = await attempt.finish(output="ok", wait=True)  # confirmed, then read back
        assert stored is not None and stored.status == "succeeded" and stored.event_count == 1
        assert await client.flush(timeout=30)
        await client._t._given.aclose()
        await client.aclose()
        return run.id, attempt.id, transport.dropped

    run_id, rollout_id, dropped = asyncio.run(main())
    assert dropped == ["/api/v1/runs", f"/api/v1/runs/{run_id}/rollouts"]
    assert [r["id"] for r in runs_named(live_server, workflow)] == [run_id]
    with raw(live_server) as http:
        assert [r["id"] for r in run_rollouts(http, run_id)] == [rollout_id]


def test_a_start_answered_503_with_retry_after_is_retried(live_server: Any, tmp_path: Path) -> None:
    client = make_client(live_server, tmp_path)
    refused: list[str] = []
    inner = client._t.client._transport

    class Overloaded(httpx.BaseTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            if creates(request) and not refused:
                refused.append(request.url.path)
                return httpx.Response(
                    503,
                    headers={"Retry-After": "0.1", "content-type": "application/problem+json"},
                    json={"title": "Service overloaded", "detail": "Every database connection stayed busy."},
                )
            return inner.handle_request(request)

    client._t.client._transport = Overloaded()
    workflow = unique("overloaded")
    run = client.start_run(workflow_name=workflow)
    assert refused == ["/api/v1/runs"] and [r["id"] for r in runs_named(live_server, workflow)] == [run.id]
    client.close()


def test_a_finish_rides_in_an_ingest_batch_with_the_time_it_was_called(live_server: Any, tmp_path: Path) -> None:
    client = make_client(live_server, tmp_path, flush_interval=5.0)  # batches wait unless flushed
    sent: list[tuple[str, dict[str, Any]]] = []

    def record(request: httpx.Request) -> None:
        sent.append((request.url.path, json.loads(request.content or b"{}")))

    client._core.sender._client().event_hooks["request"].append(record)
    run = client.start_run(workflow_name=unique("batched-finish"))
    attempts = [run.start_rollout(input={"n": n}) for n in range(3)]
    called: dict[str, float] = {}
    for attempt in attempts:
        attempt.message("question", role="user")
        attempt.message("answer", role="assistant")
        attempt.score("reward", 1.0)
        called[attempt.id] = time.time()
        attempt.finish(output="answer")
    time.sleep(1.0)  # delivery is late; the recorded end time must not be
    assert client.flush(timeout=30)
    assert [path for path, _ in sent] == ["/api/v1/ingest"]  # 6 events, 3 scores and 3 finishes: one request
    body = sent[0][1]
    assert (len(body["events"]), len(body["scores"]), len(body["finishes"])) == (6, 3, 3)
    assert client._core.sender.stats["finished"] == 3 and client._core.sender.stats["sent"] == 9
    with raw(live_server) as http:
        for attempt in attempts:
            stored = http.get(f"/rollouts/{attempt.id}", params={"events_limit": 0}).json()
            assert stored["status"] == "succeeded" and stored["event_count"] == 2 and stored["reward"] == 1.0
            ended = datetime.fromisoformat(stored["ended_at"]).timestamp()
            assert abs(ended - called[attempt.id]) < 0.5, (ended, called[attempt.id])
    client.close()


def test_finish_wait_returns_the_stored_rollout_and_a_second_finish_is_refused(
    live_server: Any, tmp_path: Path
) -> None:
    client = make_client(live_server, tmp_path)
    run = client.start_run(workflow_name=unique("finish-wait"))
    attempt = run.start_rollout()
    attempt.log("work")
    stored = attempt.finish(status="failed", error="boom", wait=True)
    assert stored is not None and stored.id == attempt.id and stored.status == "failed" and stored.error == "boom"
    assert stored.latency_ms is not None and stored.event_count == 1
    # Another client object finishing the same rollout: the server says it was already finished.
    twin = rollout.Attempt(client, stored)
    with pytest.raises(rollout.ConflictError, match="already finished"):
        twin.finish(output="again", wait=True)
    client.close()
