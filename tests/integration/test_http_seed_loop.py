"""The seed loop with plain HTTP calls against a real uvicorn process, on SQLite and PostgreSQL."""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path

import pytest

from tests.conftest import start_live
from tests.support.postgres import PostgresServer

PDF = b"%PDF-1.4\n" + bytes(range(256)) * 400


def _seed_loop(live) -> None:
    # The live server is shared by the session: a name of its own keeps this test independent.
    dataset = f"paper-summary-{uuid.uuid4().hex[:8]}"
    with live.client() as http:
        file = http.post("/api/v1/files", files={"file": ("paper.pdf", PDF, "application/pdf")}).json()
        tasks = [{"key": f"q{i}", "instruction": f"Summarise page {i}", "input": {"page": i},
                  "files": [file["id"]]} for i in range(3)]
        assert http.post("/api/v1/datasets", json={"name": dataset, "tasks": tasks}).status_code == 201

        run = http.post("/api/v1/runs", json={"dataset": dataset, "workflow_name": "Paper QA",
                                              "group_id": "thread-42"}).json()
        items = http.get(f"/api/v1/runs/{run['id']}/tasks").json()["items"]
        assert [i["task"]["key"] for i in items] == ["q0", "q1", "q2"]
        for item in items:
            task = item["task"]
            attempt = http.post(f"/api/v1/runs/{run['id']}/rollouts", json={"task_id": task["id"]}).json()
            (meta,) = task["files"]
            content = http.get(meta["download_path"])
            assert content.content == PDF and hashlib.sha256(content.content).hexdigest() == meta["sha256"]
            call_id = f"call_{uuid.uuid4().hex[:8]}"
            events = [
                {"id": str(uuid.uuid4()), "kind": "message", "role": "system", "content": "Starting task"},
                {"id": str(uuid.uuid4()), "kind": "tool_call", "name": "read_pdf", "call_id": call_id,
                 "arguments": {"page": task["input"]["page"]}},
                {"id": str(uuid.uuid4()), "kind": "tool_result", "call_id": call_id, "output": "text of page",
                 "is_error": False},
                {"id": str(uuid.uuid4()), "kind": "message", "role": "assistant", "content": "summary"},
            ]
            assert http.post(f"/api/v1/rollouts/{attempt['id']}/events",
                             json={"events": events}).json()["created"] == 4
            if task["key"] == "q1":
                http.post(f"/api/v1/rollouts/{attempt['id']}/events", json={"events": [
                    {"id": str(uuid.uuid4()), "kind": "error", "message": "model refused"}]})
                done = http.post(f"/api/v1/rollouts/{attempt['id']}/finish",
                                 json={"status": "failed", "error": "model refused"})
            else:
                done = http.post(f"/api/v1/rollouts/{attempt['id']}/finish", json={"output": f"summary {task['key']}"})
            assert done.status_code == 200, done.text
        http.post(f"/api/v1/runs/{run['id']}/finish", json={})

        detail = http.get(f"/api/v1/runs/{run['number']}").json()
        assert detail["aggregates"]["by_status"] == {"succeeded": 2, "failed": 1}
        second = http.get(f"/api/v1/runs/{run['number']}/rollouts/2").json()
        assert second["status"] == "failed" and second["error"] == "model refused"
        assert [e["kind"] for e in second["events"]] == ["message", "tool_call", "tool_result", "message", "error"]
        first = http.get(f"/api/v1/runs/{run['number']}/rollouts/1").json()
        assert first["output"] == "summary q0" and first["task_key"] == "q0"


@pytest.mark.live
def test_seed_loop_over_http_on_sqlite(live_server) -> None:
    _seed_loop(live_server)


@pytest.mark.live
@pytest.mark.postgres
def test_seed_loop_over_http_on_postgres(postgres_server: PostgresServer, tmp_path: Path) -> None:
    name = f"live_{uuid.uuid4().hex[:10]}"
    url = postgres_server.create_database(name)
    live = start_live(tmp_path / "data", database_url=url)
    try:
        _seed_loop(live)
    finally:
        live.server.close()
