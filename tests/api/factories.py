"""Small `create_*` helpers that build test data through the public API, as a client would.

Each helper asserts its request succeeded (showing the server's answer if not) and returns the JSON body.
Names are random unless given, so helpers can be called many times in one workspace.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import httpx

JSON = dict[str, Any]


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def _ok(response: httpx.Response, status: int) -> JSON:
    assert response.status_code == status, f"{response.request.method} {response.request.url}: {response.text}"
    body: JSON = response.json()
    return body


# -- events -----------------------------------------------------------------------------------------------


def message_event(text: str, role: str = "user", id: str | None = None, **fields: Any) -> JSON:
    return {"id": id or _unique("ev"), "kind": "message", "role": role, "content": text, **fields}


def tool_call_event(name: str, arguments: Any = None, call_id: str | None = None, id: str | None = None) -> JSON:
    return {"id": id or _unique("ev"), "kind": "tool_call", "name": name, "arguments": arguments or {},
            "call_id": call_id or _unique("call")}


def tool_result_event(call_id: str, output: Any, is_error: bool = False, id: str | None = None) -> JSON:
    return {"id": id or _unique("ev"), "kind": "tool_result", "call_id": call_id, "output": output,
            "is_error": is_error}


def llm_call_event(model: str = "test-model", input_tokens: int = 10, output_tokens: int = 5, cost: float = 0.001,
                   id: str | None = None) -> JSON:
    return {"id": id or _unique("ev"), "kind": "llm_call", "model": model,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens}, "cost": cost}


# -- files and datasets ------------------------------------------------------------------------------------


async def upload_file(client: httpx.AsyncClient, content: bytes = b"some notes for the task\n",
                      name: str = "notes.txt", media_type: str = "text/plain") -> JSON:
    """Upload bytes as a raw body; returns the file's metadata (id, sha256, size, ...)."""
    response = await client.post("/api/v1/files", params={"name": name}, content=content,
                                 headers={"content-type": media_type})
    return _ok(response, 201)


async def create_dataset(client: httpx.AsyncClient, name: str | None = None, tasks: list[JSON] | None = None,
                         with_file: bool = True, description: str | None = None) -> JSON:
    """A dataset (version 1). Without `tasks`, one task `task-1` is made, with an uploaded file attached when
    `with_file`. Returns the dataset with its version-1 tasks under "tasks" (each with its "files")."""
    if tasks is None:
        task: JSON = {"key": "task-1", "instruction": "Summarise the attached notes.", "input": {"n": 1}}
        if with_file:
            task["files"] = [(await upload_file(client))["id"]]
        tasks = [task]
    body: JSON = {"name": name or _unique("dataset"), "tasks": tasks}
    if description is not None:
        body["description"] = description
    dataset = _ok(await client.post("/api/v1/datasets", json=body), 201)
    listed = _ok(await client.get(f"/api/v1/datasets/{dataset['id']}/tasks", params={"limit": 1000}), 200)
    dataset["tasks"] = listed["items"]
    return dataset


async def create_version(client: httpx.AsyncClient, dataset: str, add: list[JSON] | None = None,
                         update: list[JSON] | None = None, remove: list[str] | None = None,
                         message: str | None = None) -> JSON:
    body: JSON = {"add": add or [], "update": update or [], "remove": remove or []}
    if message is not None:
        body["message"] = message
    return _ok(await client.post(f"/api/v1/datasets/{dataset}/versions", json=body), 201)


# -- runs, rollouts, scores --------------------------------------------------------------------------------


async def start_run(client: httpx.AsyncClient, dataset: JSON | str | None = None, **kw: Any) -> JSON:
    """Start a run of `dataset` (a dict from create_dataset, a name or an ID), or an ad-hoc run without one."""
    body: JSON = dict(kw)
    if dataset is not None:
        body["dataset"] = dataset["id"] if isinstance(dataset, dict) else dataset
    return _ok(await client.post("/api/v1/runs", json=body), 201)


async def list_run_tasks(client: httpx.AsyncClient, run: str | int) -> list[JSON]:
    items: list[JSON] = []
    cursor = None
    while True:
        params: JSON = {"limit": 1000, **({"cursor": cursor} if cursor else {})}
        page = _ok(await client.get(f"/api/v1/runs/{run}/tasks", params=params), 200)
        items.extend(page["items"])
        cursor = page["next_cursor"]
        if not cursor:
            return items


async def start_rollout(client: httpx.AsyncClient, run_id: str | int, task_id: str | None = None, **kw: Any) -> JSON:
    body: JSON = dict(kw)
    if task_id is not None:
        body["task_id"] = task_id
    return _ok(await client.post(f"/api/v1/runs/{run_id}/rollouts", json=body), 201)


async def add_events(client: httpx.AsyncClient, rollout_id: str, events: list[JSON]) -> JSON:
    """Append events; returns the per-item result ({created, duplicates, rejected, events: [...]})."""
    return _ok(await client.post(f"/api/v1/rollouts/{rollout_id}/events", json={"events": events}), 200)


async def add_score(client: httpx.AsyncClient, rollout_id: str, name: str = "reward", value: Any = 1.0,
                    **kw: Any) -> JSON:
    body = {"name": name, "value": value, **kw}
    return _ok(await client.post(f"/api/v1/rollouts/{rollout_id}/scores", json=body), 201)


async def finish_rollout(client: httpx.AsyncClient, rollout_id: str, **kw: Any) -> JSON:
    return _ok(await client.post(f"/api/v1/rollouts/{rollout_id}/finish", json=kw), 200)


async def get_events(client: httpx.AsyncClient, rollout_id: str) -> list[JSON]:
    page = _ok(await client.get(f"/api/v1/rollouts/{rollout_id}/events", params={"limit": 1000}), 200)
    items: list[JSON] = page["items"]
    return items


# -- keys --------------------------------------------------------------------------------------------------


async def create_key(client: httpx.AsyncClient, name: str = "test key") -> JSON:
    """A new API key of the client's workspace; the response holds the secret (shown only this once)."""
    return _ok(await client.post("/api/v1/keys", json={"name": name}), 201)


# -- a whole workspace -------------------------------------------------------------------------------------


@dataclass
class Seeded:
    """One of everything in a workspace, all made through the API."""

    dataset: JSON
    task: JSON
    file: JSON
    run: JSON
    rollout: JSON
    events: list[JSON]
    score: JSON
    key: JSON
    scorer: JSON
    export_job: JSON


async def seed_workspace(client: httpx.AsyncClient, dataset_name: str | None = None) -> Seeded:
    """A dataset with a task and a file, a run of it, a running rollout with a trace and a score, an API key."""
    dataset = await create_dataset(client, name=dataset_name)
    task = dataset["tasks"][0]
    run = await start_run(client, dataset, workflow_name="seeded", tags=["seed"])
    rollout = await start_rollout(client, run["id"], task["id"])
    call = tool_call_event("search", {"q": "notes"})
    events = [message_event("hello"), call, tool_result_event(call["call_id"], "found"),
              message_event("done", role="assistant")]
    await add_events(client, rollout["id"], events)
    score = await add_score(client, rollout["id"], "reward", 0.5)
    key = await create_key(client, "seeded key")
    scorer = await client.post("/api/v1/scorers", json={"run": run["id"], "name": "exact", "type": "exact_match"})
    assert scorer.status_code == 201, scorer.text
    job = await client.post("/api/v1/exports", json={"format": "rollout", "destination": "s3://bucket/seeded.jsonl"})
    assert job.status_code == 202, job.text
    return Seeded(dataset=dataset, task=task, file=task["files"][0], run=run, rollout=rollout, events=events,
                  score=score, key=key, scorer=scorer.json(), export_job=job.json())


# -- checks ------------------------------------------------------------------------------------------------


def assert_problem(response: httpx.Response, status: int, field: str | None = None) -> JSON:
    """An RFC 9457 problem body with this status (and, when given, an `errors` entry naming `field`)."""
    assert response.status_code == status, f"expected {status}, got {response.status_code}: {response.text}"
    assert response.headers["content-type"].split(";")[0] == "application/problem+json", response.headers
    body: JSON = response.json()
    assert isinstance(body.get("type"), str) and body["type"], body
    assert isinstance(body.get("title"), str) and body["title"], body
    assert body.get("status") == status, body
    assert isinstance(body.get("detail"), str) and body["detail"], body
    if field is not None:
        fields = [error.get("field") for error in body.get("errors") or []]
        assert field in fields, f"expected an error naming {field!r}, got {fields}: {body['detail']}"
    return body
