"""Export then import gives the same tasks and the same file bytes, in every format; imports make versions."""

from __future__ import annotations

import io
import uuid
import zipfile

import pytest

from tests.api.factories import assert_problem
from tests.conftest import Tenant
from tests.datasets.helpers import API, NOTES, PDF, comparable, varied_dataset


@pytest.mark.parametrize("fmt", ["jsonl", "harbor", "nemo-gym"])
async def test_export_then_import_gives_the_same_tasks_and_bytes(api: Tenant, fmt: str) -> None:
    source = await varied_dataset(api.client, f"src-{uuid.uuid4().hex[:6]}")
    exported = await api.client.get(f"{API}/datasets/{source['id']}/export", params={"format": fmt})
    assert exported.status_code == 200, exported.text
    target = f"copy-{uuid.uuid4().hex[:6]}"
    imported = await api.client.post(f"{API}/datasets/{target}/import", params={"format": fmt, "create": "true"},
                                     content=exported.content)
    assert imported.status_code == 201, imported.text
    result = imported.json()
    assert result["created_dataset"] and result["added"] == 4 and result["tasks"] == 4 and result["version"] == 1
    assert await comparable(api.client, target) == await comparable(api.client, source["id"])

    # Importing the same export again changes nothing: no new version.
    again = await api.client.post(f"{API}/datasets/{target}/import", params={"format": fmt}, content=exported.content)
    assert again.status_code == 201, again.text
    assert (again.json()["changed"], again.json()["version"], again.json()["unchanged"]) == (False, 1, 4)


@pytest.mark.parametrize("fmt", ["jsonl", "harbor"])
async def test_a_version_exports_to_the_same_bytes_whenever_it_is_downloaded(
        api: Tenant, fmt: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Zip entries carry a fixed time, not the clock's: two downloads a minute apart are byte-identical."""
    import time

    source = await varied_dataset(api.client, f"src-{uuid.uuid4().hex[:6]}")
    first = await api.client.get(f"{API}/datasets/{source['id']}/export", params={"format": fmt})
    later = time.time() + 61
    monkeypatch.setattr(time, "time", lambda: later)
    monkeypatch.setattr(time, "localtime", lambda seconds=None: time.gmtime(later if seconds is None else seconds))
    second = await api.client.get(f"{API}/datasets/{source['id']}/export", params={"format": fmt})
    assert first.content == second.content
    archive = zipfile.ZipFile(io.BytesIO(first.content))
    assert {info.date_time for info in archive.infolist()} == {(1980, 1, 1, 0, 0, 0)}
    assert all(info.compress_type == zipfile.ZIP_DEFLATED for info in archive.infolist())


async def test_jsonl_zip_layout_and_files_stored_once(api: Tenant) -> None:
    source = await varied_dataset(api.client, f"src-{uuid.uuid4().hex[:6]}")
    exported = await api.client.get(f"{API}/datasets/{source['id']}/export")
    assert exported.headers["content-type"] == "application/zip"
    names = zipfile.ZipFile(io.BytesIO(exported.content)).namelist()
    assert names[0] == "tasks.jsonl"
    assert sorted(n.split("/", 2)[2] for n in names[1:]) == ["notes.txt", "paper.pdf", "test.sh"]
    archive = zipfile.ZipFile(io.BytesIO(exported.content))
    pdf_entry = next(n for n in names if n.endswith("paper.pdf"))
    assert archive.read(pdf_entry) == PDF


async def test_harbor_layout(api: Tenant) -> None:
    source = await varied_dataset(api.client, f"src-{uuid.uuid4().hex[:6]}")
    exported = await api.client.get(f"{API}/datasets/{source['id']}/export", params={"format": "harbor"})
    archive = zipfile.ZipFile(io.BytesIO(exported.content))
    names = set(archive.namelist())
    assert {"dataset.toml", "a-plain/instruction.md", "a-plain/task.toml", "a-plain/files/paper.pdf",
            "a-plain/files/notes.txt", "c-nemo/tests/test.sh"} <= names
    assert archive.read("a-plain/files/notes.txt") == NOTES
    assert archive.read("a-plain/instruction.md") == b"Summarise the paper."
    task_toml = archive.read("c-nemo/task.toml").decode()
    assert "[verifier]" in task_toml and 'key = "c-nemo"' in task_toml


async def test_harbor_folder_written_by_hand_imports(api: Tenant) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("bench/dataset.toml", '[dataset]\nname = "org/bench"\n')
        archive.writestr("bench/hello/instruction.md", "Create hello.txt")
        archive.writestr("bench/hello/task.toml",
                         'version = "1.0"\n[metadata]\ndifficulty = "easy"\n[verifier]\ntimeout_sec = 60.0\n')
        archive.writestr("bench/hello/environment/Dockerfile", "FROM alpine\n")
        archive.writestr("bench/hello/tests/test.sh", "#!/bin/sh\ntest -f hello.txt\n")
        archive.writestr("bench/hello/solution/solve.sh", "touch hello.txt\n")
    name = f"hb-{uuid.uuid4().hex[:6]}"
    response = await api.client.post(f"{API}/datasets/{name}/import", params={"format": "harbor", "create": "true"},
                                     content=buffer.getvalue())
    assert response.status_code == 201, response.text
    task = (await api.client.get(f"{API}/datasets/{name}/tasks/hello")).json()
    assert task["instruction"] == "Create hello.txt"
    assert [f["name"] for f in task["files"]] == ["Dockerfile", "solve.sh", "test.sh"]
    assert task["metadata"] == {"difficulty": "easy", "harbor": {
        "verifier": {"timeout_sec": 60.0},
        "paths": ["environment/Dockerfile", "solution/solve.sh", "tests/test.sh"]}}


async def test_import_makes_a_new_version_and_diff_shows_it(api: Tenant) -> None:
    name = f"ds-{uuid.uuid4().hex[:6]}"
    first = b'{"key": "a", "instruction": "one"}\n{"key": "b", "instruction": "two"}\n{"key": "c"}\n'
    assert (await api.client.post(f"{API}/datasets/{name}/import", params={"create": "true"},
                                  content=first)).status_code == 201
    second = b'{"key": "a", "instruction": "one"}\n{"key": "b", "instruction": "TWO", "split": "x"}\n{"key": "d"}\n'
    result = (await api.client.post(f"{API}/datasets/{name}/import", content=second)).json()
    assert (result["version"], result["added"], result["updated"], result["removed"]) == (2, 1, 1, 1)
    diff = (await api.client.get(f"{API}/datasets/{name}/diff", params={"from": 1, "to": 2})).json()
    assert [(i["key"], i["change"], i["fields"]) for i in diff["items"]] == [
        ("b", "changed", ["instruction", "split"]), ("c", "removed", []), ("d", "added", [])]
    paged = (await api.client.get(f"{API}/datasets/{name}/diff", params={"from": 1, "to": 2, "limit": 2})).json()
    assert [i["key"] for i in paged["items"]] == ["b", "c"] and paged["next_cursor"]
    rest = (await api.client.get(f"{API}/datasets/{name}/diff",
                                 params={"from": 1, "to": 2, "limit": 2, "cursor": paged["next_cursor"]})).json()
    assert [i["key"] for i in rest["items"]] == ["d"] and rest["next_cursor"] is None
    merged = (await api.client.post(f"{API}/datasets/{name}/import", params={"replace": "false"},
                                    content=b'{"key": "e"}\n')).json()
    assert (merged["version"], merged["tasks"], merged["removed"]) == (3, 4, 0)


async def test_plain_jsonl_references_uploaded_files_by_sha256(api: Tenant) -> None:
    source = await varied_dataset(api.client, f"src-{uuid.uuid4().hex[:6]}")
    sha = source["tasks"][0]["files"][0]["sha256"]
    name = f"ds-{uuid.uuid4().hex[:6]}"
    body = f'{{"key": "x", "files": ["{sha}"]}}\n'.encode()
    result = await api.client.post(f"{API}/datasets/{name}/import", params={"create": "true"}, content=body)
    assert result.status_code == 201, result.text
    missing = await api.client.post(f"{API}/datasets/{name}/import", content=b'{"key": "y", "files": ["' +
                                    b"0" * 64 + b'"]}\n')
    assert_problem(missing, 422, "line.1.files.0")
    unknown = await api.client.post(f"{API}/datasets/no-such-{uuid.uuid4().hex[:6]}/import", content=body)
    assert_problem(unknown, 404)
