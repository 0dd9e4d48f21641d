"""Rollouts and traces: idempotent event batches, per-item ingestion, ordering, paging, scores, filters."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from rollout_server.rollouts.schemas import IngestResult
from tests.conftest import Tenant


def ev(kind: str, event_id: str | None = None, **body) -> dict:
    return {"id": event_id or f"ev_{uuid.uuid4().hex}", "kind": kind, **body}


async def _rollout(api: Tenant, run: dict | None = None, **body) -> dict:
    run = run or (await api.client.post("/api/v1/runs", json={"workflow_name": "wf"})).json()
    response = await api.client.post(f"/api/v1/runs/{run['id']}/rollouts", json=body)
    assert response.status_code == 201, response.text
    return response.json()


async def _events(api: Tenant, rollout_id: str) -> list[dict]:
    items, cursor = [], None
    while True:
        params = {"limit": 7, **({"cursor": cursor} if cursor else {})}
        page = (await api.client.get(f"/api/v1/rollouts/{rollout_id}/events", params=params)).json()
        items += page["items"]
        cursor = page["next_cursor"]
        if not cursor:
            return items


async def test_resending_a_batch_stores_each_event_once(api: Tenant) -> None:
    ro = await _rollout(api)
    batch = {"events": [ev("message", role="user", content=f"m{i}") for i in range(20)]}
    first = (await api.client.post(f"/api/v1/rollouts/{ro['id']}/events", json=batch)).json()
    again = (await api.client.post(f"/api/v1/rollouts/{ro['id']}/events", json=batch)).json()
    assert (first["created"], first["duplicates"]) == (20, 0)
    assert (again["created"], again["duplicates"]) == (0, 20)
    assert {r["status"] for r in again["events"]} == {"duplicate"}
    events = await _events(api, ro["id"])
    assert [e["content"] for e in events] == [f"m{i}" for i in range(20)]
    assert [e["seq"] for e in events] == list(range(1, 21))
    assert (await api.client.get(f"/api/v1/rollouts/{ro['id']}")).json()["event_count"] == 20


async def test_client_seq_orders_events_across_batches(api: Tenant) -> None:
    ro = await _rollout(api)
    late = [ev("log", message=f"l{i}", seq=i) for i in (5, 6)]
    early = [ev("log", message=f"l{i}", seq=i) for i in (1, 2, 3, 4)]
    await api.client.post(f"/api/v1/rollouts/{ro['id']}/events", json={"events": late})
    await api.client.post(f"/api/v1/rollouts/{ro['id']}/events", json={"events": early})
    assert [e["message"] for e in await _events(api, ro["id"])] == [f"l{i}" for i in range(1, 7)]
    # Server-assigned seqs continue after the highest seen.
    await api.client.post(f"/api/v1/rollouts/{ro['id']}/events", json={"events": [ev("log", message="next")]})
    assert (await _events(api, ro["id"]))[-1]["seq"] == 7


async def test_an_invalid_event_rejects_the_whole_batch(api: Tenant) -> None:
    ro = await _rollout(api)
    batch = {"events": [ev("message", role="user", content="ok"), ev("message", role="robot", content="x"),
                        ev("tool_result", output="no call id")]}
    response = await api.client.post(f"/api/v1/rollouts/{ro['id']}/events", json=batch)
    assert response.status_code == 422
    fields = [e["field"] for e in response.json()["errors"]]
    assert fields == ["events.1", "events.2"]
    assert await _events(api, ro["id"]) == []


async def test_ingest_answers_per_item_for_many_rollouts(api: Tenant) -> None:
    run = (await api.client.post("/api/v1/runs", json={})).json()
    a, b = await _rollout(api, run), await _rollout(api, run)
    done = await _rollout(api, run)
    await api.client.post(f"/api/v1/rollouts/{done['id']}/finish", json={})
    shared_id = "ev_same_id_in_two_rollouts"
    body = {
        "events": [
            {**ev("message", role="user", content="a1"), "rollout_id": a["id"]},
            {**ev("message", role="user", content="b1", event_id=shared_id), "rollout_id": b["id"]},
            {**ev("message", role="user", content="a2", event_id=shared_id), "rollout_id": a["id"]},
            {**ev("log", message="late"), "rollout_id": done["id"]},
            {**ev("log", message="lost"), "rollout_id": "ro_doesnotexist"},
        ],
        "scores": [{"rollout_id": a["id"], "name": "reward", "value": 0.75},
                   {"rollout_id": "ro_nope", "name": "reward", "value": 1}],
    }
    result = (await api.client.post("/api/v1/ingest", json=body)).json()
    # The answer is built without the response model; it must still be exactly one.
    assert IngestResult.model_validate(result).model_dump(mode="json") == result
    assert [r["status"] for r in result["events"]] == ["created", "created", "created", "rejected", "rejected"]
    assert "already succeeded" in result["events"][3]["error"]
    assert "no rollout ro_doesnotexist" in result["events"][4]["error"]
    assert [r["status"] for r in result["scores"]] == ["created", "rejected"]
    assert (result["created"], result["rejected"]) == (4, 3)
    again = (await api.client.post("/api/v1/ingest", json=body)).json()
    assert [r["status"] for r in again["events"]][:3] == ["duplicate"] * 3
    assert [e["content"] for e in await _events(api, a["id"])] == ["a1", "a2"]
    assert (await api.client.get(f"/api/v1/rollouts/{a['id']}")).json()["reward"] == 0.75


async def test_large_payloads_go_to_the_blob_store_and_read_back(api: Tenant) -> None:
    ro = await _rollout(api)
    big = "x" * 200_000
    await api.client.post(f"/api/v1/rollouts/{ro['id']}/events",
                          json={"events": [ev("tool_result", call_id="c1", output=big)]})
    (event,) = await _events(api, ro["id"])
    assert event["output"] == big and event["call_id"] == "c1"


async def test_finish_once_and_no_appends_after(api: Tenant) -> None:
    ro = await _rollout(api)
    finished = await api.client.post(f"/api/v1/rollouts/{ro['id']}/finish",
                                     json={"error": "tool crashed", "output": {"partial": True}})
    body = finished.json()
    assert body["status"] == "failed" and body["error"] == "tool crashed" and body["output"] == {"partial": True}
    assert body["latency_ms"] >= 0 and body["ended_at"]
    again = await api.client.post(f"/api/v1/rollouts/{ro['id']}/finish", json={})
    assert again.status_code == 409 and again.headers["content-type"] == "application/problem+json"
    append = await api.client.post(f"/api/v1/rollouts/{ro['id']}/events",
                                   json={"events": [ev("log", message="late")]})
    assert append.status_code == 409


async def test_tokens_count_for_an_llm_call_stored_in_the_blob_store(api: Tenant) -> None:
    """A long prompt sends the llm_call's body to the blob store; its usage still counts, once."""
    ro = await _rollout(api)
    call = ev("llm_call", model="gpt", input=[{"role": "user", "content": "x" * 100_000}],
              usage={"input_tokens": 25_000, "output_tokens": 12}, cost=0.25)
    for _ in range(2):  # the re-sent event is a duplicate and adds nothing
        await api.client.post("/api/v1/ingest", json={"events": [{**call, "rollout_id": ro["id"]}]})
    detail = (await api.client.get(f"/api/v1/rollouts/{ro['id']}")).json()
    assert (detail["input_tokens"], detail["output_tokens"], detail["cost"], detail["event_count"]) == \
        (25_000, 12, 0.25, 1)
    assert detail["events"][0]["input"][0]["content"] == "x" * 100_000


async def test_trace_timing_tokens_and_cost(api: Tenant) -> None:
    ro = await _rollout(api)
    start = datetime.now(UTC)
    span = ev("span", name="plan", started_at=start.isoformat(),
              ended_at=(start + timedelta(milliseconds=250)).isoformat())
    call = ev("llm_call", model="gpt", parent_id=span["id"], usage={"prompt_tokens": 7, "completion_tokens": 3},
              cost=0.5)
    await api.client.post(f"/api/v1/rollouts/{ro['id']}/events", json={"events": [span, call]})
    detail = (await api.client.get(f"/api/v1/rollouts/{ro['id']}", params={"events_limit": 1})).json()
    assert (detail["input_tokens"], detail["output_tokens"], detail["total_tokens"], detail["cost"]) == (7, 3, 10, 0.5)
    assert len(detail["events"]) == 1 and detail["events_next_cursor"]
    assert detail["events"][0]["duration_ms"] == 250.0
    rest = (await api.client.get(f"/api/v1/rollouts/{ro['id']}/events",
                                 params={"cursor": detail["events_next_cursor"]})).json()
    assert rest["items"][0]["parent_id"] == span["id"]


async def test_scores_kinds_and_reward(api: Tenant) -> None:
    run = (await api.client.post("/api/v1/runs", json={"reward_score": "accuracy"})).json()
    ro = await _rollout(api, run)
    for body in ({"name": "accuracy", "value": 0.9, "comment": "close"}, {"name": "passed", "value": True},
                 {"name": "label", "value": "good", "source": "human", "author": "ann@example.com"},
                 {"name": "note", "value": "long text", "data_type": "text"}):
        response = await api.client.post(f"/api/v1/rollouts/{ro['id']}/scores", json=body)
        assert response.status_code == 201, response.text
    scores = (await api.client.get(f"/api/v1/rollouts/{ro['id']}/scores")).json()["items"]
    assert [(s["name"], s["data_type"], s["value"]) for s in scores] == [
        ("accuracy", "number", 0.9), ("passed", "boolean", True), ("label", "category", "good"),
        ("note", "text", "long text")]
    assert (await api.client.get(f"/api/v1/rollouts/{ro['id']}")).json()["reward"] == 0.9
    bad = await api.client.post(f"/api/v1/rollouts/{ro['id']}/scores",
                                json={"name": "x", "value": "high", "data_type": "number"})
    assert bad.status_code == 422 and bad.json()["errors"][0]["field"] == "value"


async def test_list_rollouts_with_filters(api: Tenant) -> None:
    run_a = (await api.client.post("/api/v1/runs", json={"workflow_name": "alpha", "group_id": "g"})).json()
    run_b = (await api.client.post("/api/v1/runs", json={"workflow_name": "beta"})).json()
    made = []
    for i in range(4):
        ro = await _rollout(api, run_a if i < 3 else run_b, step=i // 2, group_key=f"p{i % 2}")
        await api.client.post(f"/api/v1/rollouts/{ro['id']}/scores", json={"name": "reward", "value": i / 4})
        if i % 2:
            await api.client.post(f"/api/v1/rollouts/{ro['id']}/finish", json={"status": "failed", "error": "x"})
        made.append(ro)

    async def ids(**params) -> list[str]:
        return [r["id"] for r in (await api.client.get("/api/v1/rollouts", params=params)).json()["items"]]

    assert await ids() == [r["id"] for r in reversed(made)]
    assert await ids(run=run_a["number"]) == [made[2]["id"], made[1]["id"], made[0]["id"]]
    assert await ids(workflow_name="beta") == [made[3]["id"]]
    assert await ids(group_id="g", status="failed") == [made[1]["id"]]
    assert await ids(reward_min=0.2, reward_max=0.6) == [made[2]["id"], made[1]["id"]]
    assert await ids(step=1) == [made[3]["id"], made[2]["id"]]
    assert await ids(group_key="p0") == [made[2]["id"], made[0]["id"]]
    future = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    assert await ids(started_after=future) == []
    page = (await api.client.get("/api/v1/rollouts", params={"limit": 3})).json()
    rest = (await api.client.get("/api/v1/rollouts", params={"cursor": page["next_cursor"]})).json()
    assert [r["id"] for r in page["items"] + rest["items"]] == [r["id"] for r in reversed(made)]


async def test_retried_starts_and_scores_with_client_keys_are_stored_once(api: Tenant) -> None:
    body = {"workflow_name": "wf", "client_key": "run-attempt-1"}
    run = (await api.client.post("/api/v1/runs", json=body)).json()
    assert (await api.client.post("/api/v1/runs", json=body)).json()["id"] == run["id"]
    first = await _rollout(api, run, client_key="k1")
    again = await _rollout(api, run, client_key="k1")
    other = await _rollout(api, run, client_key="k2")
    assert again["id"] == first["id"] and again["attempt"] == 1 and other["attempt"] == 2
    score = {"id": "score-1", "name": "reward", "value": 1.0}
    one = (await api.client.post(f"/api/v1/rollouts/{first['id']}/scores", json=score)).json()
    two = (await api.client.post(f"/api/v1/rollouts/{first['id']}/scores", json=score)).json()
    assert one["id"] == two["id"]
    batch = {"scores": [{**score, "rollout_id": first["id"]}, {"id": "score-2", "name": "x", "value": 2,
                                                              "rollout_id": first["id"]}]}
    result = (await api.client.post("/api/v1/ingest", json=batch)).json()
    assert [r["status"] for r in result["scores"]] == ["duplicate", "created"]
    assert len((await api.client.get(f"/api/v1/rollouts/{first['id']}/scores")).json()["items"]) == 2


async def test_a_client_key_reused_for_a_different_request_is_refused(api: Tenant) -> None:
    run = (await api.client.post("/api/v1/runs", json={"workflow_name": "wf", "client_key": "nightly-1"})).json()
    # The same request with a default spelled out is the same request.
    same = await api.client.post("/api/v1/runs", json={"workflow_name": "wf", "num_repeats": 1, "client_key": "nightly-1"})
    other = await api.client.post("/api/v1/runs", json={"workflow_name": "other", "client_key": "nightly-1"})
    assert same.json()["id"] == run["id"]
    assert other.status_code == 409
    problem = other.json()
    assert problem["type"].endswith("/idempotency-key-reused")
    assert [e["field"] for e in problem["errors"]] == ["client_key"]
    first = await _rollout(api, run, client_key="k1", group_key="g1")
    changed = await api.client.post(f"/api/v1/runs/{run['id']}/rollouts", json={"client_key": "k1", "group_key": "g2"})
    assert changed.status_code == 409 and changed.json()["type"].endswith("/idempotency-key-reused")
    assert (await _rollout(api, run, client_key="k1", group_key="g1"))["id"] == first["id"]
    listed = (await api.client.get("/api/v1/rollouts", params={"run": run["id"]})).json()["items"]
    assert [r["id"] for r in listed] == [first["id"]]


def test_two_starts_with_one_client_key_at_once_make_one_run(ctx) -> None:
    """The second request waits on the first's transaction, meets the unique key inside a savepoint and answers
    with the first's run (PostgreSQL; SQLite serialises writers before either looks)."""
    import threading
    import time

    from rollout_server.runs.schemas import RunCreate
    from rollout_server.runs.service import start_run
    from tests.conftest import create_tenant

    workspace_id, _ = create_tenant(ctx, "race")
    body = RunCreate(workflow_name="wf", client_key="same-key")
    first_inserted, ids, errors = threading.Event(), [], []

    def first() -> None:
        with ctx.db.transaction() as session:
            ids.append(start_run(session, workspace_id, body).id)
            first_inserted.set()
            time.sleep(0.5)  # the second request runs into the uncommitted key meanwhile

    def second() -> None:
        first_inserted.wait(10)
        try:
            with ctx.db.transaction() as session:
                ids.append(start_run(session, workspace_id, body).id)
        except Exception as error:
            errors.append(error)

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not errors, errors
    assert len(ids) == 2 and ids[0] == ids[1]
    with ctx.db.reading() as session:
        from sqlalchemy import func, select

        from rollout_server.models import Run
        assert session.scalar(select(func.count()).select_from(Run).where(Run.workspace_id == workspace_id)) == 1


async def test_cors_is_off_by_default_and_on_for_listed_origins(ctx) -> None:
    import httpx

    from rollout_server.app import create_app

    preflight = {"origin": "https://agent.example", "access-control-request-method": "POST",
                 "access-control-request-headers": "authorization, content-type"}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(context=ctx)),
                                 base_url="http://testserver") as client:
        assert "access-control-allow-origin" not in (await client.options("/api/v1/ingest", headers=preflight)).headers
    ctx.settings = ctx.settings.model_copy(update={"cors_origins": "https://agent.example"})
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(context=ctx)),
                                 base_url="http://testserver") as client:
        answer = await client.options("/api/v1/ingest", headers=preflight)
        assert answer.headers["access-control-allow-origin"] == "https://agent.example"


async def test_ingest_finishes_after_its_events_with_the_clients_end_time(api: Tenant) -> None:
    run = (await api.client.post("/api/v1/runs", json={})).json()
    a, b = await _rollout(api, run), await _rollout(api, run)
    ended = (datetime.now(UTC) - timedelta(milliseconds=1)).isoformat()
    body = {
        "events": [{**ev("message", role="assistant", content="done"), "rollout_id": a["id"]}],
        "finishes": [{"rollout_id": a["id"], "output": "42", "ended_at": ended},
                     {"rollout_id": b["id"], "status": "failed", "error": "boom"},
                     {"rollout_id": "ro_unknown", "output": "x"}],
    }
    result = (await api.client.post("/api/v1/ingest", json=body)).json()
    assert [r["status"] for r in result["finishes"]] == ["created", "created", "rejected"]
    assert result["events"][0]["status"] == "created"
    again = (await api.client.post("/api/v1/ingest", json={"finishes": body["finishes"][:1]})).json()
    assert again["finishes"][0]["status"] == "duplicate"
    done = (await api.client.get(f"/api/v1/rollouts/{a['id']}")).json()
    assert done["status"] == "succeeded" and done["output"] == "42" and done["event_count"] == 1
    assert datetime.fromisoformat(done["ended_at"]) <= datetime.fromisoformat(ended)
    far_future = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    c = await _rollout(api, run)
    finished = (await api.client.post(f"/api/v1/rollouts/{c['id']}/finish", json={"ended_at": far_future})).json()
    assert datetime.fromisoformat(finished["ended_at"]) < datetime.fromisoformat(far_future)


async def test_timestamps_without_a_zone_are_taken_as_utc(api: Tenant) -> None:
    ro = await _rollout(api)
    naive = datetime.now(UTC).replace(tzinfo=None)
    event = ev("log", message="x", started_at=naive.isoformat(),
               ended_at=(naive + timedelta(milliseconds=5)).isoformat())
    assert (await api.client.post(f"/api/v1/rollouts/{ro['id']}/events", json={"events": [event]})).status_code == 200
    mixed = ev("log", message="y", started_at=naive.isoformat(), ended_at=datetime.now(UTC).isoformat())
    assert (await api.client.post(f"/api/v1/rollouts/{ro['id']}/events", json={"events": [mixed]})).status_code == 200
    done = await api.client.post(f"/api/v1/rollouts/{ro['id']}/finish", json={"ended_at": naive.isoformat()})
    assert done.status_code == 200, done.text
    listed = await api.client.get("/api/v1/rollouts", params={"started_after": "2020-01-01T00:00:00"})
    assert listed.status_code == 200 and listed.json()["items"]
