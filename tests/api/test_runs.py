"""Runs: pinning a version, the task list with repeats, re-running failures, handles and aggregates."""

from __future__ import annotations

import uuid

from tests.conftest import Tenant


def ev(kind: str, **body) -> dict:
    return {"id": f"ev_{uuid.uuid4().hex}", "kind": kind, **body}


async def _dataset(api: Tenant, name: str = "d", n: int = 3) -> None:
    response = await api.client.post("/api/v1/datasets", json={
        "name": name, "tasks": [{"key": f"t{i}", "instruction": f"task {i}"} for i in range(n)]})
    assert response.status_code == 201, response.text


async def _all_tasks(api: Tenant, run: str, limit: int = 2) -> list[dict]:
    items, cursor = [], None
    while True:
        params = {"limit": limit, **({"cursor": cursor} if cursor else {})}
        page = (await api.client.get(f"/api/v1/runs/{run}/tasks", params=params)).json()
        items += page["items"]
        cursor = page["next_cursor"]
        if not cursor:
            return items


async def test_run_pins_latest_version_and_lists_tasks_with_repeats(api: Tenant) -> None:
    await _dataset(api)
    response = await api.client.post("/api/v1/runs", json={
        "dataset": "d", "workflow_name": "wf", "group_id": "g1", "agent_name": "bot", "agent_version": "1",
        "model": "m", "params": {"t": 0}, "tags": ["x"], "num_repeats": 3})
    assert response.status_code == 201, response.text
    run = response.json()
    assert run["number"] == 1 and run["dataset_version"] == 1 and run["task_count"] == 9
    assert run["url"].endswith(f"/w/{api.workspace_id}/runs/1")
    # A later version does not change what the run executes.
    await api.client.post("/api/v1/datasets/d/versions", json={"add": [{"key": "t9"}]})
    for limit in (1, 2, 4, 50):
        items = await _all_tasks(api, run["id"], limit)
        assert [(i["task"]["key"], i["repeat_index"]) for i in items] == \
            [(f"t{t}", r) for t in range(3) for r in range(3)]
        assert [i["position"] for i in items] == list(range(9))
    second = (await api.client.post("/api/v1/runs", json={"dataset": "d", "dataset_version": 1})).json()
    assert second["number"] == 2 and second["dataset_version"] == 1
    third = (await api.client.post("/api/v1/runs", json={"dataset": "d"})).json()
    assert third["dataset_version"] == 2 and third["task_count"] == 4


async def test_run_without_dataset_takes_ad_hoc_rollouts(api: Tenant) -> None:
    run = (await api.client.post("/api/v1/runs", json={"workflow_name": "prod"})).json()
    assert run["dataset_id"] is None and run["task_count"] == 0
    assert (await api.client.get(f"/api/v1/runs/{run['id']}/tasks")).json()["items"] == []
    rollout = await api.client.post(f"/api/v1/runs/{run['number']}/rollouts", json={"input": {"q": "hi"}})
    assert rollout.status_code == 201 and rollout.json()["input"] == {"q": "hi"}


async def test_only_failed_from_reruns_the_failed_tasks_and_links_runs(api: Tenant) -> None:
    await _dataset(api, n=4)
    first = (await api.client.post("/api/v1/runs", json={"dataset": "d"})).json()
    tasks = await _all_tasks(api, first["id"], 10)
    outcomes = {"t0": "succeeded", "t1": "failed", "t2": "errored", "t3": "succeeded"}
    for item in tasks:
        ro = (await api.client.post(f"/api/v1/runs/{first['id']}/rollouts",
                                    json={"task_id": item["task"]["id"]})).json()
        status = outcomes[item["task"]["key"]]
        await api.client.post(f"/api/v1/rollouts/{ro['id']}/finish",
                              json={"status": status, "error": None if status == "succeeded" else "boom"})
    rerun = (await api.client.post("/api/v1/runs", json={"only_failed_from": str(first["number"])})).json()
    assert rerun["rerun_of"] == {"id": first["id"], "number": first["number"]}
    assert rerun["dataset_id"] == first["dataset_id"] and rerun["task_count"] == 2
    assert [i["task"]["key"] for i in await _all_tasks(api, rerun["id"])] == ["t1", "t2"]
    only_failed = (await api.client.post("/api/v1/runs", json={
        "only_failed_from": first["id"], "failed_statuses": ["failed"]})).json()
    assert [i["task"]["key"] for i in await _all_tasks(api, only_failed["id"])] == ["t1"]


async def test_aggregates_and_human_handles(api: Tenant) -> None:
    await _dataset(api, n=2)
    run = (await api.client.post("/api/v1/runs", json={"dataset": "d", "num_repeats": 2})).json()
    items = await _all_tasks(api, run["id"], 10)
    rewards = [1.0, 0.0, 0.5, None]
    for item, reward in zip(items, rewards, strict=True):
        ro = (await api.client.post(f"/api/v1/runs/{run['number']}/rollouts",
                                    json={"task_id": item["task"]["id"], "repeat_index": item["repeat_index"]})).json()
        await api.client.post(f"/api/v1/rollouts/{ro['id']}/events", json={"events": [
            ev("llm_call", model="m", usage={"input_tokens": 10, "output_tokens": 5}, cost=0.01)]})
        if reward is not None:
            await api.client.post(f"/api/v1/rollouts/{ro['id']}/scores", json={"name": "reward", "value": reward})
            await api.client.post(f"/api/v1/rollouts/{ro['id']}/finish", json={"output": "ok"})
    detail = (await api.client.get(f"/api/v1/runs/{run['number']}")).json()
    agg = detail["aggregates"]
    assert agg["rollout_count"] == 4 and agg["by_status"] == {"succeeded": 3, "running": 1}
    assert abs(agg["mean_reward"] - 0.5) < 1e-9 and agg["scored_count"] == 3
    assert (agg["input_tokens"], agg["output_tokens"], agg["total_tokens"]) == (40, 20, 60)
    assert abs(agg["cost"] - 0.04) < 1e-9
    assert agg["latency_p50_ms"] is not None and agg["latency_p95_ms"] >= agg["latency_p50_ms"]
    third = (await api.client.get(f"/api/v1/runs/{run['number']}/rollouts/3")).json()
    assert third["attempt"] == 3 and third["run_number"] == run["number"]
    assert third["url"].endswith(f"/runs/{run['number']}/rollouts/3")
    assert (await api.client.get(f"/api/v1/runs/{run['id']}/rollouts/3")).json()["id"] == third["id"]
    assert (await api.client.get(f"/api/v1/runs/{run['number']}/rollouts/9")).status_code == 404
    finished = await api.client.post(f"/api/v1/runs/{run['number']}/finish", json={})
    assert finished.json()["status"] == "finished" and finished.json()["finished_at"]
    assert (await api.client.post(f"/api/v1/runs/{run['number']}/finish", json={})).status_code == 409
    late = await api.client.post(f"/api/v1/runs/{run['number']}/rollouts", json={})
    assert late.status_code == 409


async def test_list_runs_filters_and_pages(api: Tenant) -> None:
    await _dataset(api, n=1)
    for i in range(5):
        await api.client.post("/api/v1/runs", json={
            "dataset": "d" if i % 2 else None, "workflow_name": f"wf{i % 2}", "tags": ["even"] if i % 2 == 0 else []})
    page = (await api.client.get("/api/v1/runs", params={"limit": 2})).json()
    assert [r["number"] for r in page["items"]] == [5, 4] and page["next_cursor"]
    rest = (await api.client.get("/api/v1/runs", params={"limit": 10, "cursor": page["next_cursor"]})).json()
    assert [r["number"] for r in rest["items"]] == [3, 2, 1] and rest["next_cursor"] is None
    assert [r["number"] for r in (await api.client.get("/api/v1/runs", params={"workflow_name": "wf1"})).json()["items"]] == [4, 2]
    assert [r["number"] for r in (await api.client.get("/api/v1/runs", params={"dataset": "d"})).json()["items"]] == [4, 2]
    assert [r["number"] for r in (await api.client.get("/api/v1/runs", params={"tag": "even"})).json()["items"]] == [5, 3, 1]


async def test_task_from_another_dataset_or_version_is_refused(api: Tenant) -> None:
    await _dataset(api, "d", 1)
    await _dataset(api, "e", 1)
    run = (await api.client.post("/api/v1/runs", json={"dataset": "d"})).json()
    other_task = (await api.client.get("/api/v1/datasets/e/tasks")).json()["items"][0]
    response = await api.client.post(f"/api/v1/runs/{run['id']}/rollouts", json={"task_id": other_task["id"]})
    assert response.status_code == 422 and response.json()["errors"][0]["field"] == "task_id"


async def test_tag_filter_pages_past_many_untagged_runs(api: Tenant) -> None:
    for tags in (["rare"], ["rare"], *([[]] * 12)):
        await api.client.post("/api/v1/runs", json={"tags": tags})
    page = (await api.client.get("/api/v1/runs", params={"tag": "rare", "limit": 1})).json()
    assert [r["number"] for r in page["items"]] == [2] and page["next_cursor"]
    rest = (await api.client.get("/api/v1/runs", params={"tag": "rare", "cursor": page["next_cursor"]})).json()
    assert [r["number"] for r in rest["items"]] == [1]


async def test_deleting_a_run_removes_everything_recorded_in_it(api: Tenant, ctx) -> None:
    from sqlalchemy import func, select

    from rollout_server.models import Rollout, Score, TraceEvent

    keep = (await api.client.post("/api/v1/runs", json={"workflow_name": "keep"})).json()
    doomed = (await api.client.post("/api/v1/runs", json={"workflow_name": "doomed"})).json()
    rollouts = {}
    for run in (keep, doomed):
        ro = (await api.client.post(f"/api/v1/runs/{run['id']}/rollouts", json={})).json()
        await api.client.post(f"/api/v1/rollouts/{ro['id']}/events",
                              json={"events": [ev("message", role="user", content="hi")]})
        await api.client.post(f"/api/v1/rollouts/{ro['id']}/scores", json={"name": "reward", "value": 1})
        rollouts[run["id"]] = ro["id"]

    def counts() -> tuple[int, int, int]:
        with ctx.db.reading() as session:
            return tuple(session.scalar(select(func.count()).select_from(model)) or 0  # type: ignore[return-value]
                         for model in (Rollout, TraceEvent, Score))

    assert counts() == (2, 2, 2)
    gone = await api.client.delete(f"/api/v1/runs/{doomed['number']}")  # by number, as every run path allows
    assert (gone.status_code, gone.content) == (204, b"")
    assert counts() == (1, 1, 1)
    assert (await api.client.get(f"/api/v1/runs/{doomed['id']}")).status_code == 404
    assert (await api.client.get(f"/api/v1/rollouts/{rollouts[doomed['id']]}")).status_code == 404
    assert (await api.client.delete(f"/api/v1/runs/{doomed['id']}")).status_code == 404  # once
    assert (await api.client.get(f"/api/v1/rollouts/{rollouts[keep['id']]}")).json()["event_count"] == 1
    later = (await api.client.post("/api/v1/runs", json={})).json()
    assert later["number"] == doomed["number"] + 1  # numbers are not reused


async def test_deleting_one_rollout_and_a_run_that_has_re_runs(api: Tenant) -> None:
    dataset = (await api.client.post("/api/v1/datasets", json={
        "name": f"del-{uuid.uuid4().hex[:6]}", "tasks": [{"key": "a", "instruction": "x"}]})).json()
    source = (await api.client.post("/api/v1/runs", json={"dataset": dataset["name"]})).json()
    task = (await api.client.get(f"/api/v1/runs/{source['id']}/tasks")).json()["items"][0]
    first = (await api.client.post(f"/api/v1/runs/{source['id']}/rollouts", json={"task_id": task["task"]["id"]})).json()
    second = (await api.client.post(f"/api/v1/runs/{source['id']}/rollouts", json={})).json()
    await api.client.post(f"/api/v1/rollouts/{first['id']}/finish", json={"status": "failed", "error": "x"})
    assert (await api.client.delete(f"/api/v1/rollouts/{second['id']}")).status_code == 204
    assert (await api.client.get(f"/api/v1/rollouts/{second['id']}")).status_code == 404
    detail = (await api.client.get(f"/api/v1/runs/{source['id']}")).json()
    assert detail["aggregates"]["rollout_count"] == 1
    rerun = (await api.client.post("/api/v1/runs", json={"only_failed_from": str(source["number"])})).json()
    assert "rerun_of" in rerun, rerun
    refused = await api.client.delete(f"/api/v1/runs/{source['id']}")
    assert refused.status_code == 409 and f"re-run {rerun['number']}" in refused.json()["detail"]
    assert (await api.client.delete(f"/api/v1/runs/{rerun['id']}")).status_code == 204
    assert (await api.client.delete(f"/api/v1/runs/{source['id']}")).status_code == 204
