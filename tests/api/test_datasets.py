"""Datasets: versions made by add/update/remove in one request, tasks paged, files attached."""

from __future__ import annotations

from tests.conftest import Tenant


async def _upload(client, data: bytes = b"hello", name: str = "a.txt") -> dict:
    response = await client.post("/api/v1/files", params={"name": name}, content=data,
                                 headers={"content-type": "text/plain"})
    assert response.status_code == 201, response.text
    return response.json()


async def test_create_dataset_makes_version_one(api: Tenant) -> None:
    file = await _upload(api.client)
    response = await api.client.post("/api/v1/datasets", json={
        "name": "qa", "description": "questions",
        "tasks": [{"key": "t1", "instruction": "Say hi", "input": {"x": 1}, "files": [file["id"]],
                   "expected_output": "hi", "split": "train", "metadata": {"level": 2}}],
    })
    assert response.status_code == 201, response.text
    dataset = response.json()
    assert dataset["latest_version"] == 1 and dataset["task_count"] == 1
    for ref in (dataset["id"], "qa"):
        assert (await api.client.get(f"/api/v1/datasets/{ref}")).json()["id"] == dataset["id"]
    task = (await api.client.get("/api/v1/datasets/qa/tasks/t1")).json()
    assert task["instruction"] == "Say hi" and task["input"] == {"x": 1}
    assert task["expected_output"] == "hi" and task["split"] == "train" and task["metadata"] == {"level": 2}
    assert [f["sha256"] for f in task["files"]] == [file["sha256"]]


async def test_one_request_adds_updates_and_removes_as_one_version(api: Tenant) -> None:
    await api.client.post("/api/v1/datasets", json={"name": "d", "tasks": [
        {"key": "a", "instruction": "A"}, {"key": "b", "instruction": "B"}, {"key": "c", "instruction": "C"}]})
    response = await api.client.post("/api/v1/datasets/d/versions", json={
        "message": "second", "add": [{"key": "d", "instruction": "D"}],
        "update": [{"key": "a", "instruction": "A2"}], "remove": ["c"],
    })
    assert response.status_code == 201, response.text
    version = response.json()
    assert (version["number"], version["added"], version["updated"], version["removed"], version["task_count"]) == \
        (2, 1, 1, 1, 3)
    latest = (await api.client.get("/api/v1/datasets/d/tasks")).json()["items"]
    assert [(t["key"], t["instruction"]) for t in latest] == [("a", "A2"), ("b", "B"), ("d", "D")]
    # Version 1 is immutable: it still reads as it was.
    first = (await api.client.get("/api/v1/datasets/d/versions/1/tasks")).json()["items"]
    assert [(t["key"], t["instruction"]) for t in first] == [("a", "A"), ("b", "B"), ("c", "C")]
    versions = (await api.client.get("/api/v1/datasets/d/versions")).json()["items"]
    assert [v["number"] for v in versions] == [2, 1]
    # Fields left out of an update are kept.
    await api.client.post("/api/v1/datasets/d/versions", json={"update": [{"key": "b", "metadata": {"m": 1}}]})
    b = (await api.client.get("/api/v1/datasets/d/tasks/b")).json()
    assert b["instruction"] == "B" and b["metadata"] == {"m": 1} and b["version"] == 3


async def test_version_conflicts_and_unknown_keys_write_nothing(api: Tenant) -> None:
    await api.client.post("/api/v1/datasets", json={"name": "d", "tasks": [{"key": "a"}]})
    added_twice = await api.client.post("/api/v1/datasets/d/versions", json={"add": [{"key": "a"}]})
    assert added_twice.status_code == 409 and added_twice.json()["errors"][0]["field"] == "add.0.key"
    missing = await api.client.post("/api/v1/datasets/d/versions",
                                    json={"add": [{"key": "z"}], "remove": ["nope"]})
    assert missing.status_code == 404 and missing.json()["errors"][0]["field"] == "remove.0"
    assert (await api.client.get("/api/v1/datasets/d")).json()["latest_version"] == 1
    empty = await api.client.post("/api/v1/datasets/d/versions", json={})
    assert empty.status_code == 422
    duplicate = await api.client.post("/api/v1/datasets", json={"name": "d"})
    assert duplicate.status_code == 409


async def test_tasks_are_paged_by_cursor(api: Tenant) -> None:
    tasks = [{"key": f"k{i:03d}", "instruction": str(i)} for i in range(25)]
    await api.client.post("/api/v1/datasets", json={"name": "big", "tasks": tasks})
    seen, cursor = [], None
    while True:
        params = {"limit": 10, **({"cursor": cursor} if cursor else {})}
        page = (await api.client.get("/api/v1/datasets/big/tasks", params=params)).json()
        seen += [t["key"] for t in page["items"]]
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert seen == [t["key"] for t in tasks]
    bad = await api.client.get("/api/v1/datasets/big/tasks", params={"cursor": "garbage"})
    assert bad.status_code == 422 and bad.json()["errors"][0]["field"] == "cursor"


async def test_attach_files_to_a_task_makes_a_version(api: Tenant) -> None:
    first = await _upload(api.client, b"one", "one.txt")
    second = await _upload(api.client, b"two", "two.txt")
    await api.client.post("/api/v1/datasets", json={"name": "d", "tasks": [{"key": "a", "files": [first["id"]]}]})
    response = await api.client.post("/api/v1/datasets/d/tasks/a/files", json={"files": [second["id"]]})
    assert response.status_code == 201, response.text
    task = (await api.client.get("/api/v1/datasets/d/tasks/a")).json()
    assert [f["name"] for f in task["files"]] == ["one.txt", "two.txt"]
    old = (await api.client.get("/api/v1/datasets/d/tasks/a", params={"version": 1})).json()
    assert [f["name"] for f in old["files"]] == ["one.txt"]
    unknown = await api.client.post("/api/v1/datasets/d/versions",
                                    json={"add": [{"key": "b", "files": ["file_nope"]}]})
    assert unknown.status_code == 422 and unknown.json()["errors"][0]["field"] == "add.0.files.0"
