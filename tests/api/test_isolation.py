"""Workspaces are walls: another workspace's key and IDs answer exactly as IDs that do not exist.

Every /api/v1 route that takes an ID in its path is found from the app's own OpenAPI document (the API's
contract, and stable across FastAPI's internal route classes), so a route added later is covered without
touching this file — or the test fails, naming the path parameter or request body it lacks.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from rollout_server.app import create_app
from rollout_server.context import AppContext
from rollout_server.ids import new_id
from tests.api.factories import (
    Seeded,
    add_events,
    create_dataset,
    list_run_tasks,
    message_event,
    seed_workspace,
    start_rollout,
    start_run,
    upload_file,
)
from tests.conftest import Tenant

API = "/api/v1"

# Path parameter -> how to name A's object, and the prefix of a made-up ID of the same shape (None: not an ID).
PATH_PARAMS: dict[str, tuple[str, str | None]] = {
    "dataset": ("dataset_id", "ds"),
    "key": ("task_key", None),
    "version": ("version", None),
    "task_id": ("task_id", "task"),
    "file_id": ("file_id", "file"),
    "run": ("run_id", "run"),
    "attempt": ("attempt", None),
    "rollout_id": ("rollout_id", "ro"),
    "key_id": ("key_id", "key"),
    "scorer_id": ("scorer_id", "scorer"),
    "job_id": ("job_id", "job"),
}
# Path parameters that name no object of a workspace: such routes are lists, checked with the lists.
NOT_IDS: dict[str, str] = {"format": "rollout"}

# A valid body for every write route with a path ID, so both requests get past validation to the lookup.
WRITE_BODIES: dict[tuple[str, str], Any] = {
    ("POST", "/datasets/{dataset}/versions"): {"add": [{"key": "intruder", "instruction": "x"}]},
    ("POST", "/datasets/{dataset}/tasks/{key}/files"): {"files": ["<own file>"]},
    ("POST", "/runs/{run}/finish"): {"status": "cancelled"},
    ("POST", "/runs/{run}/rollouts"): {"input": {"q": "intruder"}},
    ("POST", "/rollouts/{rollout_id}/events"): {"events": [message_event("intruder", id="ev-intruder")]},
    ("POST", "/rollouts/{rollout_id}/finish"): {"status": "failed", "error": "intruder"},
    ("POST", "/rollouts/{rollout_id}/scores"): {"name": "reward", "value": 0.0},
    ("DELETE", "/keys/{key_id}"): None,
    ("DELETE", "/runs/{run}"): None,
    ("DELETE", "/rollouts/{rollout_id}"): None,
    ("DELETE", "/scorers/{scorer_id}"): None,
    ("POST", "/runs/{run}/score"): {},
    ("POST", "/runs/{run}/advantages"): {},
    ("POST", "/rollouts/{rollout_id}/discard"): {"reason": "intruder"},
    # The import body is read only after the dataset is found; this JSON object is also one valid JSONL line.
    ("POST", "/datasets/{dataset}/import"): {"key": "intruder", "instruction": "x"},
    ("POST", "/rollouts/{rollout_id}/promote"): {"dataset": "intruder-regressions"},
    ("POST", "/runs/{run}/promote"): {"dataset": "intruder-regressions"},
}


HTTP_METHODS = ("get", "post", "put", "patch", "delete")


@dataclass
class Route:
    path: str
    methods: set[str]


def _routes(app: FastAPI) -> list[Route]:
    paths = app.openapi()["paths"]
    return [Route(path, {m.upper() for m in operations if m in HTTP_METHODS})
            for path, operations in paths.items() if path.startswith(API + "/")]


def _path_params(path: str) -> list[str]:
    return re.findall(r"{(\w+)(?::\w+)?}", path)


def _fill(path: str, values: dict[str, str]) -> str:
    return re.sub(r"{(\w+)(?::\w+)?}", lambda m: values[m.group(1)], path)


def _made_up(value: str, prefix: str | None) -> str:
    if prefix is not None:
        return new_id(prefix)
    if value.isdigit():
        return value
    return ("x" + uuid.uuid4().hex * 4)[: len(value)]


def _a_values(seeded: Seeded) -> dict[str, str]:
    return {
        "dataset_id": seeded.dataset["id"], "dataset_name": seeded.dataset["name"], "task_key": seeded.task["key"],
        "version": "1", "task_id": seeded.task["id"], "file_id": seeded.file["id"], "run_id": seeded.run["id"],
        "attempt": str(seeded.rollout["attempt"]), "rollout_id": seeded.rollout["id"], "key_id": seeded.key["id"],
        "scorer_id": seeded.scorer["id"], "job_id": seeded.export_job["id"],
    }


def _normalised(response: httpx.Response, names: dict[str, str]) -> tuple[int, str, Any]:
    """Status, content type and body with each named ID replaced by its placeholder."""
    text = response.text
    for value in sorted(names, key=len, reverse=True):
        text = text.replace(value, names[value])
    try:
        body = json.loads(text)
    except ValueError:
        body = text
    return response.status_code, response.headers.get("content-type", ""), body


def assert_same_answer(real: httpx.Response, fake: httpx.Response, real_names: dict[str, str],
                       fake_names: dict[str, str], status: int = 404) -> None:
    got, expected = _normalised(real, real_names), _normalised(fake, fake_names)
    assert got == expected, f"another workspace's ID answered {got}, an unknown ID {expected}"
    assert real.status_code == status, real.text
    assert real.headers["content-type"] == "application/problem+json", real.headers
    body = real.json()
    assert {"type", "title", "status", "detail"} <= body.keys() and body["status"] == status


async def _snapshot(client: httpx.AsyncClient, seeded: Seeded) -> dict[str, Any]:
    """Everything A can read about its seeded objects (minus last_used_at, which A's own reads move)."""
    ds, run, ro = seeded.dataset["id"], seeded.run["id"], seeded.rollout["id"]
    paths = [
        f"/datasets/{ds}", f"/datasets/{ds}/versions", f"/datasets/{ds}/tasks", f"/tasks/{seeded.task['id']}",
        f"/files/{seeded.file['id']}", f"/runs/{run}", f"/runs/{run}/tasks", f"/rollouts/{ro}",
        f"/rollouts/{ro}/events", f"/rollouts/{ro}/scores", f"/rollouts?run={run}", "/runs", "/datasets",
    ]
    snapshot: dict[str, Any] = {}
    for path in paths:
        response = await client.get(API + path)
        assert response.status_code == 200, (path, response.text)
        snapshot[path] = response.json()
    content = await client.get(f"{API}/files/{seeded.file['id']}/content")
    snapshot["content"] = content.content
    keys = (await client.get(f"{API}/keys")).json()["items"]
    snapshot["keys"] = [{k: v for k, v in key.items() if k != "last_used_at"} for key in keys]
    return snapshot


@pytest.fixture
async def seeded(api: Tenant) -> Seeded:
    return await seed_workspace(api.client, dataset_name=f"alpha-{uuid.uuid4().hex[:8]}")


async def test_every_id_route_answers_as_for_an_unknown_id(ctx: AppContext, api: Tenant, other: Tenant,
                                                           seeded: Seeded) -> None:
    routes = _routes(create_app(context=ctx))
    real = _a_values(seeded)
    own_file = (await upload_file(other.client, b"b's own bytes", "b.txt"))["id"]
    before = await _snapshot(api.client, seeded)

    problems: list[str] = []
    checked = 0
    for route in routes:
        params = _path_params(route.path)
        if not params or set(params) <= set(NOT_IDS):
            continue
        unknown = [p for p in params if p not in PATH_PARAMS]
        assert not unknown, f"{route.path}: teach PATH_PARAMS how to fill {unknown} with workspace A's object"
        # The dataset path segment takes an ID or a name: try both.
        variants = [{}, {"dataset": "dataset_name"}] if "dataset" in params else [{}]
        for variant in variants:
            real_names: dict[str, str] = {}
            fake_names: dict[str, str] = {}
            real_path_values: dict[str, str] = {}
            fake_path_values: dict[str, str] = {}
            for param in params:
                source, prefix = PATH_PARAMS[param]
                source = variant.get(param, source)
                value = real[source]
                made_up = _made_up(value, None if source == "dataset_name" else prefix)
                real_path_values[param], fake_path_values[param] = value, made_up
                if made_up != value:
                    real_names[value] = fake_names[made_up] = f"<{param}>"
            for method in sorted(route.methods):
                short = route.path[len(API):]
                kwargs: dict[str, Any] = {}
                if method != "GET":
                    assert (method, short) in WRITE_BODIES, \
                        f"{method} {route.path}: add a valid request body to WRITE_BODIES"
                    body = WRITE_BODIES[(method, short)]
                    if body is not None:
                        kwargs["content"] = json.dumps(body).replace("<own file>", own_file)
                        kwargs["headers"] = {"content-type": "application/json"}
                if method == "GET" and not variant:
                    # Sanity: the IDs are real, so A itself gets an answer (not a 404) on the same path.
                    mine = await api.client.request(method, _fill(route.path, real_path_values))
                    assert mine.status_code == 200, f"A cannot read its own {route.path}: {mine.text}"
                real_response = await other.client.request(method, _fill(route.path, real_path_values), **kwargs)
                fake_response = await other.client.request(method, _fill(route.path, fake_path_values), **kwargs)
                checked += 1
                try:
                    assert_same_answer(real_response, fake_response, real_names, fake_names)
                except AssertionError as error:
                    problems.append(f"{method} {route.path} {variant or ''}: {error}")
    assert not problems, "\n".join(problems)
    assert checked >= 20, f"only {checked} route checks ran; did route discovery break?"

    assert await _snapshot(api.client, seeded) == before
    still_valid = await api.client.get(f"{API}/workspace",
                                       headers={"authorization": f"Bearer {seeded.key['secret']}"})
    assert still_valid.status_code == 200 and still_valid.json()["id"] == api.workspace_id


async def test_lists_with_another_key_never_show_a_workspaces_objects(ctx: AppContext, api: Tenant, other: Tenant,
                                                                      seeded: Seeded) -> None:
    await seed_workspace(other.client, dataset_name=f"beta-{uuid.uuid4().hex[:8]}")
    secrets_of_a = {
        api.workspace_id, seeded.dataset["id"], seeded.dataset["name"], seeded.task["id"], seeded.file["id"],
        seeded.run["id"], seeded.rollout["id"], seeded.score["id"], seeded.key["id"], seeded.key["secret"],
        api.api_key, seeded.scorer["id"], seeded.export_job["id"], *(e["id"] for e in seeded.events),
    }
    routes = _routes(create_app(context=ctx))
    listed = 0
    for route in routes:
        params = _path_params(route.path)
        if not set(params) <= set(NOT_IDS) or "GET" not in route.methods:
            continue
        response = await other.client.get(_fill(route.path, {p: NOT_IDS[p] for p in params}))
        assert response.status_code == 200, (route.path, response.text)
        leaked = [s for s in secrets_of_a if s in response.text]
        assert not leaked, f"GET {route.path} with B's key shows A's {leaked}"
        listed += 1
    assert listed >= 4

    # Filters naming A's objects find nothing of A's.
    for params in ({"task_id": seeded.task["id"]}, {"workflow_name": "seeded"}, {"status": "running"},
                   {"reward_min": 0.0}):
        page = (await other.client.get(f"{API}/rollouts", params=params)).json()
        assert seeded.rollout["id"] not in {r["id"] for r in page["items"]}, params
    assert (await other.client.get(f"{API}/rollouts", params={"task_id": seeded.task["id"]})).json()["items"] == []
    for params in ({"tag": "seed"}, {"workflow_name": "seeded"}):
        page = (await other.client.get(f"{API}/runs", params=params)).json()
        assert seeded.run["id"] not in {r["id"] for r in page["items"]}, params
    page = (await other.client.get(f"{API}/datasets", params={"q": seeded.dataset["name"]})).json()
    assert page["items"] == []

    # Filters that resolve an ID answer as for an unknown one.
    fake_run, fake_ds = new_id("run"), new_id("ds")
    fake_name = _made_up(seeded.dataset["name"], None)
    cases = [
        ("/rollouts", "run", seeded.run["id"], fake_run),
        ("/runs", "dataset", seeded.dataset["id"], fake_ds),
        ("/runs", "dataset", seeded.dataset["name"], fake_name),
    ]
    for path, name, real_value, fake_value in cases:
        real_response = await other.client.get(API + path, params={name: real_value})
        fake_response = await other.client.get(API + path, params={name: fake_value})
        assert_same_answer(real_response, fake_response, {real_value: "<id>"}, {fake_value: "<id>"})


async def test_writes_naming_a_workspaces_ids_act_as_not_found_and_change_nothing(api: Tenant, other: Tenant,
                                                                                  seeded: Seeded) -> None:
    before = await _snapshot(api.client, seeded)
    mine = await create_dataset(other.client, name=f"beta-{uuid.uuid4().hex[:8]}")
    my_run = await start_run(other.client, mine)
    my_rollout = await start_rollout(other.client, my_run["id"], mine["tasks"][0]["id"])
    a_file, a_task, a_run, a_rollout = seeded.file["id"], seeded.task["id"], seeded.run["id"], seeded.rollout["id"]
    fake_file, fake_task, fake_run, fake_rollout = new_id("file"), new_id("task"), new_id("run"), new_id("ro")

    async def both(method: str, path: str, make_body: Any, real_value: str, fake_value: str,
                   status: int) -> tuple[httpx.Response, httpx.Response]:
        real_response = await other.client.request(method, API + path, json=make_body(real_value))
        fake_response = await other.client.request(method, API + path, json=make_body(fake_value))
        assert_same_answer(real_response, fake_response, {real_value: "<id>"}, {fake_value: "<id>"}, status)
        return real_response, fake_response

    # A task of A's dataset cannot be started in B's run.
    real, _ = await both("POST", f"/runs/{my_run['id']}/rollouts", lambda t: {"task_id": t}, a_task, fake_task, 422)
    assert real.json()["errors"][0]["field"] == "task_id"
    # A's file cannot be attached to B's task, nor used in a new dataset or version.
    key = mine["tasks"][0]["key"]
    await both("POST", f"/datasets/{mine['id']}/tasks/{key}/files", lambda f: {"files": [f]}, a_file, fake_file, 422)
    await both("POST", "/datasets", lambda f: {"name": "stolen", "tasks": [{"files": [f]}]}, a_file, fake_file, 422)
    await both("POST", f"/datasets/{mine['id']}/versions", lambda f: {"add": [{"key": "k", "files": [f]}]},
               a_file, fake_file, 422)
    assert (await other.client.get(f"{API}/datasets/{mine['id']}")).json()["latest_version"] == 1
    # A's dataset and runs cannot seed a run of B's.
    for ref, fake in ((seeded.dataset["id"], new_id("ds")), (seeded.dataset["name"], "missing-dataset-xyz")):
        real, _ = await both("POST", "/runs", lambda d: {"dataset": d}, ref, fake, 404)
        assert real.json()["errors"][0]["field"] == "dataset"
    real, _ = await both("POST", "/runs", lambda r: {"only_failed_from": r}, a_run, fake_run, 404)
    assert real.json()["errors"][0]["field"] == "only_failed_from"
    real, _ = await both("POST", "/runs", lambda r: {"dataset": mine["id"], "only_failed_from": r},
                         a_run, fake_run, 404)
    # The batch endpoint rejects A's rollout item by item, in the words it uses for an unknown rollout.
    response = await other.client.post(f"{API}/ingest", json={
        "events": [
            {**message_event("intruder", id="ev-x1"), "rollout_id": a_rollout},
            {**message_event("intruder", id="ev-x2"), "rollout_id": fake_rollout},
            {**message_event("mine", id="ev-x3"), "rollout_id": my_rollout["id"]},
        ],
        "scores": [
            {"rollout_id": a_rollout, "name": "reward", "value": 0.0},
            {"rollout_id": fake_rollout, "name": "reward", "value": 0.0},
            {"rollout_id": my_rollout["id"], "name": "reward", "value": 1.0},
        ],
    })
    assert response.status_code == 200, response.text
    result = response.json()
    assert (result["created"], result["rejected"]) == (2, 4)
    for items in (result["events"], result["scores"]):
        assert [i["status"] for i in items] == ["rejected", "rejected", "created"]
        assert items[0]["error"].replace(a_rollout, "<id>") == items[1]["error"].replace(fake_rollout, "<id>")
    # A re-send of A's event ID into B's own rollout is B's own event, not a duplicate of A's.
    again = await add_events(other.client, my_rollout["id"], [seeded.events[0]])
    assert again["created"] == 1

    assert await _snapshot(api.client, seeded) == before


async def test_run_numbers_are_per_workspace(api: Tenant, other: Tenant, seeded: Seeded) -> None:
    assert seeded.run["number"] == 1
    mine = await create_dataset(other.client, name=f"beta-{uuid.uuid4().hex[:8]}")
    my_run = await start_run(other.client, mine)
    assert my_run["number"] == 1 and my_run["id"] != seeded.run["id"]
    assert (await other.client.get(f"{API}/runs/1")).json()["id"] == my_run["id"]
    assert (await api.client.get(f"{API}/runs/1")).json()["id"] == seeded.run["id"]
    assert [i["task"]["id"] for i in await list_run_tasks(other.client, 1)] == [mine["tasks"][0]["id"]]
    # Attempt 1 of "run 1" is A's rollout for A, and nothing for B until B records one.
    missing = await other.client.get(f"{API}/runs/1/rollouts/1")
    assert missing.status_code == 404 and seeded.rollout["id"] not in missing.text
    assert (await other.client.get(f"{API}/rollouts", params={"run": "1"})).json()["items"] == []
    mine_ro = await start_rollout(other.client, 1, mine["tasks"][0]["id"])
    assert (mine_ro["run_id"], mine_ro["attempt"]) == (my_run["id"], 1)
    assert (await other.client.get(f"{API}/runs/1/rollouts/1")).json()["id"] == mine_ro["id"]
    assert (await api.client.get(f"{API}/runs/1/rollouts/1")).json()["id"] == seeded.rollout["id"]
    assert (await api.client.get(f"{API}/runs/1")).json()["aggregates"]["rollout_count"] == 1
    # B's next run is 2, whatever A does.
    await start_run(api.client, seeded.dataset)
    assert (await start_run(other.client))["number"] == 2


async def test_same_bytes_and_names_in_two_workspaces_stay_apart(api: Tenant, other: Tenant) -> None:
    content = b"identical bytes in both workspaces"
    a_file = await upload_file(api.client, content, "same.txt")
    b_file = await upload_file(other.client, content, "same.txt")
    assert a_file["id"] != b_file["id"] and a_file["sha256"] == b_file["sha256"]
    assert (await other.client.get(f"{API}/files/{a_file['id']}")).status_code == 404
    assert (await other.client.get(f"{API}/files/{b_file['id']}/content")).content == content
    a_set = await create_dataset(api.client, name="shared-name")
    b_set = await create_dataset(other.client, name="shared-name", with_file=False)
    assert a_set["id"] != b_set["id"]
    assert (await other.client.get(f"{API}/datasets/shared-name")).json()["id"] == b_set["id"]
    assert (await api.client.get(f"{API}/datasets/shared-name")).json()["id"] == a_set["id"]
    assert (await other.client.get(f"{API}/datasets/shared-name/tasks/task-1")).json()["files"] == []
