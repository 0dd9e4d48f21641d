"""Bad input gets a clear RFC 9457 problem and loses nothing: malformed JSON, wrong types, unknown fields,
oversized bodies (refused before being read whole), finished rollouts, bad keys — never a 500, never a
partial write.

The clients here turn server exceptions into 500 responses (instead of raising into the test), so every
check can say "not a 500" in the same terms a real client would see.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from rollout_server.app import create_app
from rollout_server.context import AppContext
from rollout_server.models import File
from tests.api.factories import (
    JSON,
    add_events,
    assert_problem,
    create_dataset,
    finish_rollout,
    get_events,
    message_event,
    start_rollout,
    start_run,
    upload_file,
)
from tests.conftest import Tenant

API = "/api/v1"
MiB = 1024 * 1024
CHUNK = 64 * 1024


def _client(ctx: AppContext, key: str | None) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=create_app(context=ctx), raise_app_exceptions=False)
    headers = {"authorization": f"Bearer {key}"} if key else {}
    return httpx.AsyncClient(transport=transport, base_url="http://testserver", headers=headers)


@pytest.fixture
async def client(ctx: AppContext, api: Tenant) -> AsyncIterator[httpx.AsyncClient]:
    """Workspace A's key, but a 500 comes back as a response rather than an exception."""
    async with _client(ctx, api.api_key) as c:
        yield c


@pytest.fixture
async def rollout(client: httpx.AsyncClient) -> JSON:
    """A running ad-hoc rollout (its run has no dataset)."""
    return await start_rollout(client, (await start_run(client))["id"], input={"q": "?"})


@dataclass
class Body:
    """A streamed request body that records how much of it the server pulled."""

    size: int
    prefix: bytes = b'{"events": ['
    consumed: int = field(default=0)

    async def stream(self) -> AsyncIterator[bytes]:
        sent = 0
        while sent < self.size:
            chunk = (self.prefix if sent == 0 else b"")
            chunk = (chunk + b" " * CHUNK)[: min(CHUNK, self.size - sent)]
            sent += len(chunk)
            self.consumed = sent
            yield chunk


def _raw_json(text: bytes) -> dict[str, Any]:
    return {"content": text, "headers": {"content-type": "application/json"}}


# -- malformed JSON, wrong types, missing and unknown fields ------------------------------------------------


async def test_malformed_json_is_a_400_problem(client: httpx.AsyncClient, rollout: JSON) -> None:
    for path in ("/datasets", "/runs", "/ingest", "/keys", "/rollouts/{ro}/events", "/rollouts/{ro}/finish",
                 "/rollouts/{ro}/scores", "/datasets/{ds}/versions"):
        for text in (b'{"name": "x",', b"{'name': 'x'}", b"\xff\xfe"):
            path = path.replace("{ro}", rollout["id"]).replace("{ds}", "any")
            body = assert_problem(await client.post(API + path, **_raw_json(text)), 400, field="body")
            assert "JSON" in body["detail"], (path, body)


def _invalid_bodies(run: str, ro: str) -> list[tuple[str, str, Any, str]]:
    """(method, path, JSON body, the field the problem must name): wrong types, missing and unknown fields."""
    return [
        # Wrong types, named by their full path.
        ("POST", f"/rollouts/{ro}/events", {"events": [message_event("a"), message_event("b"), {"id": "e3", "kind": 123}]},
         "events.2.kind"),
        ("POST", f"/rollouts/{ro}/events", {"events": [message_event("a"), {**message_event("b"), "seq": "2nd"}]},
         "events.1.seq"),
        ("POST", "/runs", {"num_repeats": "many"}, "num_repeats"),
        ("POST", "/datasets", {"name": "typo", "tasks": [{"input": "not an object"}]}, "tasks.0.input"),
        ("POST", f"/rollouts/{ro}/scores", {"name": "r", "value": 1, "source": 7}, "source"),
        ("POST", f"/rollouts/{ro}/finish", {"status": "exploded"}, "status"),
        ("POST", "/runs", [], "body"),
        # A message event without its role breaks its kind's rule, named by position.
        ("POST", f"/rollouts/{ro}/events", {"events": [{"id": "m", "kind": "message", "content": "x"}]}, "events.0"),
        # Missing required fields.
        ("POST", "/datasets", {}, "name"),
        ("POST", f"/rollouts/{ro}/scores", {"name": "r"}, "value"),
        ("POST", f"/rollouts/{ro}/events", {}, "events"),
        ("POST", f"/rollouts/{ro}/events", {"events": [{"kind": "log", "message": "no id"}]}, "events.0.id"),
        ("POST", "/ingest", {"events": [message_event("whose?")]}, "events.0.rollout_id"),
        ("POST", "/runs", None, "body"),
        # Unknown fields (extra=forbid), so a typo is never silently dropped.
        ("POST", "/datasets", {"name": "typo", "colour": "red"}, "colour"),
        ("POST", "/datasets", {"name": "typo", "tasks": [{"instructions": "x"}]}, "tasks.0.instructions"),
        ("POST", "/runs", {"datset": "typo"}, "datset"),
        ("POST", "/ingest", {"evnts": []}, "evnts"),
        ("POST", "/keys", {"name": "k", "scope": "all"}, "scope"),
        ("POST", f"/rollouts/{ro}/finish", {"statuss": "failed"}, "statuss"),
        ("POST", f"/rollouts/{ro}/scores", {"name": "r", "value": 1, "weight": 2}, "weight"),
        ("POST", f"/runs/{run}/rollouts", {"task": "x"}, "task"),
        # Query and path parameters.
        ("GET", "/runs?limit=lots", None, "limit"),
        ("GET", "/runs?limit=0", None, "limit"),
        ("GET", "/rollouts?started_after=yesterday", None, "started_after"),
        ("GET", "/rollouts?status=bored", None, "status"),
        ("GET", f"/runs/{run}/rollouts/first", None, "attempt"),
    ]


async def test_invalid_input_is_a_422_naming_the_field(client: httpx.AsyncClient, rollout: JSON) -> None:
    for method, path, body, name in _invalid_bodies(rollout["run_id"], rollout["id"]):
        kwargs = {} if body is None else {"json": body}
        problem = assert_problem(await client.request(method, API + path, **kwargs), 422, field=name)
        assert name in problem["detail"], (path, problem["detail"])
    # None of it left anything behind.
    assert await get_events(client, rollout["id"]) == []
    assert (await client.get(f"{API}/datasets")).json()["items"] == []
    assert len((await client.get(f"{API}/runs")).json()["items"]) == 1
    detail = (await client.get(f"{API}/rollouts/{rollout['id']}")).json()
    assert (detail["status"], detail["scores"], detail["event_count"]) == ("running", [], 0)
    assert len((await client.get(f"{API}/keys")).json()["items"]) == 1


async def test_oversized_bodies_are_refused_before_being_read_whole(ctx: AppContext, client: httpx.AsyncClient,
                                                                    rollout: JSON) -> None:
    ingest, request = ctx.settings.max_ingest_bytes, ctx.settings.max_request_bytes
    assert ingest == 4 * MiB
    # A declared Content-Length over the limit is refused before a byte of the body is read.
    for path, limit in (("/ingest", ingest), (f"/rollouts/{rollout['id']}/events", ingest), ("/datasets", request),
                        ("/runs", request), (f"/rollouts/{rollout['id']}/finish", request)):
        body = Body(limit + 1)
        response = await client.post(API + path, content=body.stream(),
                                     headers={"content-type": "application/json", "content-length": str(limit + 1)})
        problem = assert_problem(response, 413)
        assert str(limit) in problem["detail"], problem
        assert body.consumed <= CHUNK, f"{path}: the server read {body.consumed} bytes of a body it should refuse"
    # A chunked body with no length is cut off once it passes the limit, not read to its end.
    for path in ("/ingest", f"/rollouts/{rollout['id']}/events"):
        body = Body(3 * ingest)
        response = await client.post(API + path, content=body.stream(), headers={"content-type": "application/json"})
        assert "content-length" not in response.request.headers
        assert_problem(response, 413)
        assert body.consumed <= ingest + CHUNK, f"{path}: the server read {body.consumed} bytes past the limit"
    assert await get_events(client, rollout["id"]) == []
    # Exactly 4 MiB is still accepted, declared or streamed; one byte more is not.
    prefix = b'{"events": [], "scores": []}'
    exact = prefix + b" " * (ingest - len(prefix))
    response = await client.post(f"{API}/ingest", **_raw_json(exact))
    assert response.status_code == 200, response.text
    streamed = Body(ingest, prefix=prefix)
    response = await client.post(f"{API}/ingest", content=streamed.stream(), headers={"content-type": "application/json"})
    assert response.status_code == 200, response.text
    assert_problem(await client.post(f"{API}/ingest", **_raw_json(exact + b" ")), 413)


async def test_ingest_takes_at_most_1000_events(ctx: AppContext, client: httpx.AsyncClient, rollout: JSON) -> None:
    assert ctx.settings.max_ingest_events == 1000
    events = [{**message_event(f"m{i}", id=f"e{i}"), "rollout_id": rollout["id"]} for i in range(1001)]
    body = assert_problem(await client.post(f"{API}/ingest", json={"events": events}), 422, field="events")
    assert "1000" in body["detail"]
    single = [{k: v for k, v in e.items() if k != "rollout_id"} for e in events]
    assert_problem(await client.post(f"{API}/rollouts/{rollout['id']}/events", json={"events": single}), 422,
                   field="events")
    assert await get_events(client, rollout["id"]) == []
    response = await client.post(f"{API}/ingest", json={"events": events[:1000]})
    assert response.status_code == 200 and response.json()["created"] == 1000, response.text


async def test_uploads_over_the_limit_are_refused_and_leave_nothing(ctx: AppContext, api: Tenant) -> None:
    small = replace(ctx, settings=ctx.settings.model_copy(update={"max_upload_bytes": 1000}))
    async with _client(small, api.api_key) as client:
        declared = Body(5000, prefix=b"")
        response = await client.post(f"{API}/files", params={"name": "big.bin"}, content=declared.stream(),
                                     headers={"content-type": "application/octet-stream", "content-length": "5000"})
        assert_problem(response, 413)
        assert declared.consumed == 0
        streamed = Body(50_000, prefix=b"")
        response = await client.post(f"{API}/files", params={"name": "big.bin"}, content=streamed.stream(),
                                     headers={"content-type": "application/octet-stream"})
        assert_problem(response, 413)
        assert streamed.consumed <= 1000 + CHUNK
        response = await client.post(f"{API}/files", files={"file": ("big.bin", b"x" * 5000)})
        assert_problem(response, 413)
        ok = await upload_file(client, b"y" * 1000, "fits.bin")
        assert ok["size"] == 1000
    with ctx.db.reading() as session:
        names = session.scalars(select(File.name).where(File.workspace_id == api.workspace_id)).all()
    assert names == ["fits.bin"]


# -- state conflicts --------------------------------------------------------------------------------------


async def test_finished_rollouts_refuse_a_second_finish_and_more_events(client: httpx.AsyncClient,
                                                                        rollout: JSON) -> None:
    await add_events(client, rollout["id"], [message_event("before")])
    await finish_rollout(client, rollout["id"], output="done")
    body = assert_problem(await client.post(f"{API}/rollouts/{rollout['id']}/finish", json={"error": "again"}), 409)
    assert "succeeded" in body["detail"]
    body = assert_problem(await client.post(f"{API}/rollouts/{rollout['id']}/events",
                                            json={"events": [message_event("after")]}), 409)
    assert "succeeded" in body["detail"]
    # The batch endpoint answers per item: the finished rollout's event is rejected, the rest are stored.
    other = await start_rollout(client, rollout["run_id"])
    response = await client.post(f"{API}/ingest", json={"events": [
        {**message_event("late"), "rollout_id": rollout["id"]},
        {**message_event("fine"), "rollout_id": other["id"]},
    ]})
    assert response.status_code == 200, response.text
    items = response.json()["events"]
    assert [i["status"] for i in items] == ["rejected", "created"] and "succeeded" in items[0]["error"]
    detail = (await client.get(f"{API}/rollouts/{rollout['id']}")).json()
    assert detail["status"] == "succeeded" and detail["output"] == "done" and detail["error"] is None
    assert [e["content"] for e in await get_events(client, rollout["id"])] == ["before"]


# -- authentication and unknown paths --------------------------------------------------------------------


def _api_operations(app: Any) -> list[tuple[str, str]]:
    paths = app.openapi()["paths"]
    return [(method.upper(), re.sub(r"{\w+}", "1", path)) for path, ops in paths.items() if path.startswith(API)
            for method in ops if method in ("get", "post", "put", "patch", "delete")]


async def test_every_endpoint_needs_a_valid_key(ctx: AppContext, api: Tenant) -> None:
    revoked = (await api.client.post(f"{API}/keys", json={"name": "old"})).json()
    assert (await api.client.delete(f"{API}/keys/{revoked['id']}")).status_code == 200
    headers: list[dict[str, str]] = [
        {}, {"authorization": "Bearer"}, {"authorization": "Bearer not-a-key"},
        {"authorization": f"Basic {base64.b64encode(b'user:pass').decode()}"},
        {"authorization": api.api_key}, {"authorization": f"Bearer {revoked['secret']}"},
    ]
    operations = _api_operations(create_app(context=ctx))
    async with _client(ctx, None) as anonymous:
        assert len(operations) >= 20
        for method, path in operations:
            response = await anonymous.request(method, path)
            body = assert_problem(response, 401)
            assert response.headers["www-authenticate"] == "Bearer", (method, path)
            assert "Bearer" in body["detail"]
        for header in headers:
            response = await anonymous.get(f"{API}/runs", headers=header)
            assert_problem(response, 401)
            response = await anonymous.post(f"{API}/ingest", json={"events": []}, headers=header)
            assert_problem(response, 401)
        ok = await anonymous.get(f"{API}/workspace", headers={"authorization": f"bearer {api.api_key}"})
        assert ok.status_code == 200 and ok.json()["id"] == api.workspace_id


async def test_unknown_endpoints_and_methods_are_problems(client: httpx.AsyncClient) -> None:
    body = assert_problem(await client.get(f"{API}/nothing-here"), 404)
    assert "/api/v1/nothing-here" in body["detail"]
    assert_problem(await client.post(f"{API}/runs/1/explode", json={}), 404)
    assert_problem(await client.delete(f"{API}/runs"), 405)


# -- never a partial write --------------------------------------------------------------------------------


async def test_a_batch_with_one_invalid_event_stores_nothing(client: httpx.AsyncClient, rollout: JSON) -> None:
    good = [message_event("one"), message_event("two")]
    bad = {"id": "bad", "kind": "tool_result", "output": "no call_id"}
    response = await client.post(f"{API}/rollouts/{rollout['id']}/events", json={"events": [*good, bad]})
    assert_problem(response, 422, field="events.2")
    response = await client.post(f"{API}/ingest", json={"events": [
        {**e, "rollout_id": rollout["id"]} for e in [*good, {**bad, "kind": "sneeze"}]]})
    assert_problem(response, 422, field="events.2.kind")
    response = await client.post(f"{API}/ingest", json={
        "events": [{**e, "rollout_id": rollout["id"]} for e in good],
        "scores": [{"rollout_id": rollout["id"], "name": "reward", "value": 1, "data_type": "percent"}]})
    assert_problem(response, 422, field="scores.0.data_type")
    assert await get_events(client, rollout["id"]) == []
    detail = (await client.get(f"{API}/rollouts/{rollout['id']}")).json()
    assert detail["event_count"] == 0 and detail["scores"] == []
    # The same batch, fixed, is stored once however often it is sent.
    for _ in range(2):
        await add_events(client, rollout["id"], good)
    assert [e["id"] for e in await get_events(client, rollout["id"])] == [e["id"] for e in good]


async def test_a_version_with_one_bad_task_creates_no_version(client: httpx.AsyncClient) -> None:
    dataset = await create_dataset(client)
    add: list[JSON] = [{"key": f"new-{i}", "instruction": str(i)} for i in range(3)]
    add.append({"key": "new-3", "files": ["file_01nosuchfile0000000000000", dataset["tasks"][0]["files"][0]["id"]]})
    response = await client.post(f"{API}/datasets/{dataset['id']}/versions", json={"add": add})
    body = assert_problem(response, 422, field="add.3.files.0")
    assert "file_01nosuchfile0000000000000" in body["detail"]
    response = await client.post(f"{API}/datasets/{dataset['id']}/versions",
                                 json={"add": add[:3], "update": [{"key": "no-such-task", "instruction": "x"}]})
    assert_problem(response, 404, field="update.0.key")
    response = await client.post(f"{API}/datasets/{dataset['id']}/versions",
                                 json={"add": [{"key": "twice"}, {"key": "twice"}]})
    assert_problem(response, 422, field="add.1.key")
    after = (await client.get(f"{API}/datasets/{dataset['id']}")).json()
    assert (after["latest_version"], after["task_count"]) == (1, 1)
    assert [v["number"] for v in (await client.get(f"{API}/datasets/{dataset['id']}/versions")).json()["items"]] == [1]
    keys = [t["key"] for t in (await client.get(f"{API}/datasets/{dataset['id']}/tasks")).json()["items"]]
    assert keys == ["task-1"]
    # A new dataset with a bad task is not created at all.
    response = await client.post(f"{API}/datasets", json={"name": "half", "tasks": [
        {"key": "ok"}, {"key": "bad", "files": ["file_01nosuchfile0000000000000"]}]})
    assert_problem(response, 422)
    assert_problem(await client.get(f"{API}/datasets/half"), 404)


# -- known server bugs: each test states the behaviour wanted -------------------------------------------


async def test_bad_file_in_a_new_dataset_names_the_request_field(client: httpx.AsyncClient) -> None:
    response = await client.post(f"{API}/datasets", json={"name": "d", "tasks": [
        {"key": "a"}, {"key": "b", "files": ["file_01nosuchfile0000000000000"]}]})
    assert_problem(response, 422, field="tasks.1.files.0")


async def test_attaching_an_unknown_file_names_the_request_field(client: httpx.AsyncClient) -> None:
    dataset = await create_dataset(client)
    response = await client.post(f"{API}/datasets/{dataset['id']}/tasks/task-1/files",
                                 json={"files": ["file_01nosuchfile0000000000000"]})
    assert_problem(response, 422, field="files.0")


async def test_a_wrong_type_in_a_union_field_names_the_field(client: httpx.AsyncClient, rollout: JSON) -> None:
    # Score values are number, boolean or string; a list is none of them.
    response = await client.post(f"{API}/rollouts/{rollout['id']}/scores", json={"name": "r", "value": [1]})
    body = assert_problem(response, 422)
    assert [e["field"] for e in body["errors"]] == ["value"], body


def _cursor(*values: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(values)).encode()).decode().rstrip("=")


async def test_a_forged_cursor_is_a_422_not_a_500(client: httpx.AsyncClient, rollout: JSON) -> None:
    run, ro = rollout["run_id"], rollout["id"]
    dataset = (await create_dataset(client, with_file=False))["id"]
    cases = [
        ("/runs", _cursor("not a time", "x")), ("/rollouts", _cursor("not a time", "x")),
        ("/datasets", _cursor(5)), (f"/datasets/{dataset}/versions", _cursor("five")),
        (f"/datasets/{dataset}/tasks", _cursor(5)), (f"/rollouts/{ro}/events", _cursor("a", "b")),
        (f"/runs/{run}/tasks", _cursor("a", "b", "c")), (f"/runs/{run}/tasks", _cursor(None, None, None)),
        ("/runs", "!!not base64!!"),
    ]
    answers = {path + " " + cursor: (await client.get(API + path, params={"cursor": cursor})).status_code
               for path, cursor in cases}
    wrong = {case: status for case, status in answers.items() if status != 422}
    assert not wrong, wrong


async def test_integers_out_of_range_are_a_422_not_a_500(client: httpx.AsyncClient, rollout: JSON) -> None:
    run, ro = rollout["run_id"], rollout["id"]
    answers = {
        "step": (await client.post(f"{API}/runs/{run}/rollouts", json={"step": 10**30})).status_code,
        "repeat_index": (await client.post(f"{API}/runs/{run}/rollouts", json={"repeat_index": 2**40})).status_code,
        "seq": (await client.post(f"{API}/rollouts/{ro}/events",
                                  json={"events": [message_event("x", seq=2**70)]})).status_code,
        "run number": (await client.get(f"{API}/runs/{10**20}")).status_code,
        "attempt": (await client.get(f"{API}/runs/{run}/rollouts/{10**20}")).status_code,
        "step filter": (await client.get(f"{API}/rollouts", params={"step": 10**20})).status_code,
    }
    wrong = {case: status for case, status in answers.items() if status not in (404, 422)}
    assert not wrong, wrong


async def test_nul_characters_never_cause_a_500(request: pytest.FixtureRequest, client: httpx.AsyncClient,
                                                rollout: JSON) -> None:
    run, ro = rollout["run_id"], rollout["id"]
    answers = {
        "event content": (await client.post(f"{API}/rollouts/{ro}/events",
                                            json={"events": [message_event("nul\u0000byte")]})).status_code,
        "dataset description": (await client.post(f"{API}/datasets",
                                                  json={"name": "nul", "description": "a\u0000b"})).status_code,
        "score value": (await client.post(f"{API}/rollouts/{ro}/scores",
                                          json={"name": "label", "value": "a\u0000b"})).status_code,
        "rollout group_key": (await client.post(f"{API}/runs/{run}/rollouts", json={"group_key": "g\u0000"})).status_code,
        "key name": (await client.post(f"{API}/keys", json={"name": "k\u0000"})).status_code,
        "filter": (await client.get(f"{API}/runs", params={"workflow_name": "w\u0000"})).status_code,
    }
    wrong = {case: status for case, status in answers.items() if status >= 500}
    assert not wrong, wrong


async def test_non_finite_numbers_are_refused(client: httpx.AsyncClient, rollout: JSON) -> None:
    response = await client.post(f"{API}/rollouts/{rollout['id']}/scores",
                                 **_raw_json(b'{"name": "reward", "value": 1e309}'))
    readable = (await client.get(f"{API}/rollouts/{rollout['id']}")).status_code
    assert (response.status_code, readable) == (422, 200)


async def test_bodies_orjson_refuses_take_the_standard_path(client: httpx.AsyncClient, rollout: JSON) -> None:
    """Bodies are parsed by orjson; what it refuses but the standard library reads (NaN, 1e400) gets the same
    422 as before, and what neither reads is a 400 naming malformed JSON."""
    ro = rollout["id"]
    nan = await client.post(f"{API}/ingest", **_raw_json(
        b'{"events": [{"rollout_id": "%s", "id": "n1", "kind": "log", "message": "m", "x": NaN}]}' % ro.encode()))
    huge = await client.post(f"{API}/ingest", **_raw_json(
        b'{"events": [{"rollout_id": "%s", "id": "n2", "kind": "log", "message": "m", "x": 1e400}]}' % ro.encode()))
    broken = await client.post(f"{API}/ingest", **_raw_json(b'{"events": [}'))
    stored = (await client.get(f"{API}/rollouts/{ro}")).json()["event_count"]
    assert (nan.status_code, huge.status_code, broken.status_code, stored) == (422, 422, 400, 0)
    assert "finite" in nan.text and "finite" in huge.text
    assert broken.headers["content-type"].startswith("application/problem+json")


async def test_escaped_nul_in_an_ingest_batch_is_cleaned(client: httpx.AsyncClient, rollout: JSON) -> None:
    """The orjson fast path hands a body straight to the schema only when it holds no escaped NUL."""
    ro = rollout["id"]
    body = {"events": [{**message_event("a\u0000b"), "rollout_id": ro}]}
    answer = await client.post(f"{API}/ingest", content=json.dumps(body).encode(),
                               headers={"content-type": "application/json"})
    assert answer.status_code == 200, answer.text
    events = (await client.get(f"{API}/rollouts/{ro}")).json()["events"]
    assert [e["content"] for e in events] == ["a\ufffdb"]
