"""Dataset diffs, downloads and imports in the UI: the same services as the API's diff, export and import,
with the session's auth, CSRF on the import forms, members only for imports, 404 for another workspace."""

from __future__ import annotations

import io
import json
import re
import zipfile

import httpx
import pytest

from tests.ui.conftest import World, csrf_of
from tests.ui.seed import Seeded

XSS = "<script>window.__xss = 1</script>"


async def _second_version(world: World, ds: str) -> None:
    response = await world.api.post(f"/api/v1/datasets/{ds}/versions", json={
        "message": "v2",
        "update": [{"key": "paper-2", "input": {"max_words": 12, "note": XSS}, "expected_output": {"dataset": "WMT"}}],
        "remove": ["paper-3"],
        "add": [{"key": "paper-4", "instruction": f"New {XSS}", "metadata": {"difficulty": "hard"}}],
    })
    assert response.status_code == 201, response.text


async def test_diff_page_shows_added_removed_and_changed(world: World, seeded: Seeded,
                                                         owner: httpx.AsyncClient) -> None:
    ws, ds = world.workspace_id, seeded.dataset_id
    await _second_version(world, ds)
    dataset_page = await owner.get(f"/w/{ws}/datasets/{ds}")
    assert f'href="/w/{ws}/datasets/{ds}/diff?from=1&amp;to=2"' in dataset_page.text  # "changes" of v2
    assert f'href="/w/{ws}/datasets/{ds}/diff?from=0&amp;to=1"' in dataset_page.text
    assert 'id="diff-picker"' in dataset_page.text

    for path in (f"/w/{ws}/datasets/{ds}/diff?from=1&to=2", f"/w/{ws}/datasets/{ds}/diff"):  # default: latest
        page = await owner.get(path)
        assert page.status_code == 200, page.text[:2000]
        html = page.text
        assert "content-security-policy" in page.headers
        api = (await world.api.get(f"/api/v1/datasets/{ds}/diff", params={"from": 1, "to": 2})).json()
        assert {(i["key"], i["change"]) for i in api["items"]} == {
            ("paper-2", "changed"), ("paper-3", "removed"), ("paper-4", "added")}
        assert html.count('class="diff-item diff-added"') == 1
        assert html.count('class="diff-item diff-removed"') == 1
        assert html.count('class="diff-item diff-changed"') == 1
        assert "input, expected_output" in html  # the changed fields, in the API's order
        # before/after values, JSON pretty-printed and escaped
        assert "&#34;max_words&#34;: 10" in html and "&#34;max_words&#34;: 12" in html
        assert "WMT 2014" in html and "&#34;dataset&#34;: &#34;WMT&#34;" in html
        assert "&lt;script&gt;window.__xss = 1&lt;/script&gt;" in html and XSS not in html
        assert "Give the training time." in html  # the removed task's values
        assert "&#34;difficulty&#34;: &#34;hard&#34;" in html  # the added task's values

    first = await owner.get(f"/w/{ws}/datasets/{ds}/diff?from=0&to=1")
    assert first.text.count('class="diff-item diff-added"') == 3 and "paper-notes.md" in first.text
    same = await owner.get(f"/w/{ws}/datasets/{ds}/diff?from=2&to=2")
    assert same.status_code == 200 and "No task differs" in same.text
    for bad in ("from=2&to=1", "from=abc", "to=9"):
        refused = await owner.get(f"/w/{ws}/datasets/{ds}/diff?{bad}")
        assert refused.status_code in (404, 422), bad
        assert 'id="diff-problem"' in refused.text and 'id="diff-picker"' in refused.text, bad


async def test_diff_pages_with_the_service_cursor(world: World, owner: httpx.AsyncClient) -> None:
    tasks = [{"key": f"t-{i:03d}", "instruction": f"task {i}"} for i in range(60)]
    created = await world.api.post("/api/v1/datasets", json={"name": "many", "tasks": tasks})
    ds = created.json()["id"]
    page = await owner.get(f"/w/{world.workspace_id}/datasets/{ds}/diff?from=0&to=1")
    assert page.text.count('class="diff-item diff-added"') == 50
    found = re.search(r'href="\?([^"]+)" id="diff-next"', page.text)
    assert found, "no next-page link"
    nxt = await owner.get(f"/w/{world.workspace_id}/datasets/{ds}/diff?" + found.group(1).replace("&amp;", "&"))
    assert nxt.text.count('class="diff-item diff-added"') == 10
    assert "t-059" in nxt.text and "t-000" not in nxt.text and 'id="diff-next"' not in nxt.text


@pytest.mark.parametrize(("fmt", "media_type"), [("jsonl", "application/zip"), ("harbor", "application/zip"),
                                                 ("nemo-gym", "application/x-ndjson")])
async def test_download_is_the_api_export(world: World, seeded: Seeded, viewer: httpx.AsyncClient,
                                          fmt: str, media_type: str) -> None:
    ws, ds = world.workspace_id, seeded.dataset_id
    page = await viewer.get(f"/w/{ws}/datasets/{ds}")
    assert f'href="/w/{ws}/datasets/{ds}/export?format={fmt}&amp;version=1"' in page.text  # viewers download
    ui = await viewer.get(f"/w/{ws}/datasets/{ds}/export", params={"format": fmt, "version": "1"})
    api = await world.api.get(f"/api/v1/datasets/{ds}/export", params={"format": fmt, "version": 1})
    assert ui.status_code == 200 and api.status_code == 200
    assert ui.headers["content-type"].startswith(media_type)
    assert ui.headers["content-disposition"].startswith("attachment;")
    assert ui.content == api.content
    if media_type == "application/zip":
        names = zipfile.ZipFile(io.BytesIO(ui.content)).namelist()
        assert any(n.endswith("paper-notes.md") for n in names)


async def test_download_needs_a_session_and_the_workspace(world: World, seeded: Seeded,
                                                          outsider: httpx.AsyncClient) -> None:
    ws, ds = world.workspace_id, seeded.dataset_id
    path = f"/w/{ws}/datasets/{ds}/export?format=jsonl"
    async with world.client() as anonymous:
        assert (await anonymous.get(path)).status_code == 303  # to the sign-in page
    # An API key does not open UI routes.
    keyed = await world.api.get(path, follow_redirects=False)
    assert keyed.status_code == 303
    for outsider_path in (path, f"/w/{ws}/datasets/{ds}/diff", f"/w/{world.other_workspace_id}/datasets/{ds}/export",
                          f"/w/{world.other_workspace_id}/datasets/{ds}/diff"):
        response = await outsider.get(outsider_path)
        assert response.status_code == 404, outsider_path
        assert seeded.dataset_name not in response.text


async def _versions(world: World, ds: str) -> list[int]:
    return [v["number"] for v in (await world.api.get(f"/api/v1/datasets/{ds}/versions")).json()["items"]]


async def test_import_forms_make_versions_and_show_problems(world: World, seeded: Seeded,
                                                            owner: httpx.AsyncClient) -> None:
    ws, ds = world.workspace_id, seeded.dataset_id
    listing = await owner.get(f"/w/{ws}/datasets")
    assert 'id="import-form"' in listing.text and f'action="/w/{ws}/datasets/import"' in listing.text
    token = await csrf_of(owner, f"/w/{ws}/datasets/{ds}")
    exported = (await world.api.get(f"/api/v1/datasets/{ds}/export", params={"format": "jsonl"})).content

    # From the list: a new dataset from the exported zip, with its files.
    made = await owner.post(f"/w/{ws}/datasets/import", data={"csrf_token": token, "dataset": "copied",
                                                                "format": "jsonl", "mode": "replace"},
                            files={"file": ("copy.zip", exported, "application/zip")})
    assert made.status_code == 303, made.text[:2000]
    copied = (await world.api.get("/api/v1/datasets/copied")).json()
    assert made.headers["location"] == f"/w/{ws}/datasets/{copied['id']}"
    shown = await owner.get(made.headers["location"])
    assert "Imported copy.zip into copied: version 1" in shown.text
    copy_task = (await world.api.get("/api/v1/datasets/copied/tasks/paper-1")).json()
    assert copy_task["files"][0]["name"] == "paper-notes.md"

    # On a dataset's page: plain JSONL, merged, makes one version.
    line = json.dumps({"key": "paper-9", "instruction": "Who are the authors?", "expected_output": "Vaswani et al."})
    merged = await owner.post(f"/w/{ws}/datasets/{ds}/import", data={"csrf_token": token, "format": "jsonl",
                                                                      "mode": "merge", "message": "from the UI"},
                              files={"file": ("more.jsonl", line.encode() + b"\n", "application/x-ndjson")})
    assert merged.status_code == 303, merged.text[:2000]
    assert await _versions(world, ds) == [2, 1]
    version = (await world.api.get(f"/api/v1/datasets/{ds}/versions")).json()["items"][0]
    assert version["message"] == "from the UI" and version["task_count"] == 4 and version["added"] == 1
    assert "version 2 (+1 added" in (await owner.get(merged.headers["location"])).text

    # The same again changes nothing: no version.
    again = await owner.post(f"/w/{ws}/datasets/{ds}/import", data={"csrf_token": token, "format": "jsonl",
                                                                     "mode": "merge"},
                             files={"file": ("more.jsonl", line.encode() + b"\n", "application/x-ndjson")})
    assert again.status_code == 303
    assert "nothing changed" in (await owner.get(again.headers["location"])).text
    assert await _versions(world, ds) == [2, 1]

    # Replace: keys missing from the file are removed.
    replaced = await owner.post(f"/w/{ws}/datasets/{ds}/import", data={"csrf_token": token, "format": "nemo-gym",
                                                                        "mode": "replace"},
                                files={"file": ("one.jsonl", (await world.api.get(
                                    f"/api/v1/datasets/{ds}/export", params={"format": "nemo-gym", "version": 1})
                                ).content.splitlines()[0] + b"\n", "application/x-ndjson")})
    assert replaced.status_code == 303, replaced.text[:2000]
    assert (await world.api.get(f"/api/v1/datasets/{ds}/versions")).json()["items"][0]["task_count"] == 1

    # Problems are shown in the page as the API's problem detail, and nothing is written.
    before = await _versions(world, ds)
    for data, upload, status, text in [
        ({"format": "harbor"}, ("x.jsonl", line.encode(), "application/x-ndjson"), 422, "Harbor dataset is a zip"),
        ({"format": "jsonl"}, ("bad.jsonl", b'{"key": "x", "instruction": 3}\n', "application/x-ndjson"), 422,
         "instruction must be text"),
        ({"format": "jsonl"}, ("bad.zip", b"PK\x03\x04 not a zip", "application/zip"), None, ""),
        ({"format": "yaml"}, ("x.jsonl", line.encode(), "application/x-ndjson"), 422, "Unknown format"),
        ({"format": "jsonl"}, None, 422, "Choose a file"),
    ]:
        response = await owner.post(f"/w/{ws}/datasets/{ds}/import", data={"csrf_token": token, **data},
                                    files={"file": upload} if upload else {"unused": ("", b"", "text/plain")})
        if status is not None:
            assert response.status_code == status, (data, response.status_code)
        else:
            assert 400 <= response.status_code < 500, response.status_code
        assert 'id="import-problem"' in response.text and text in response.text
        assert 'id="import-form"' in response.text and "<h2>Tasks</h2>" in response.text
    assert await _versions(world, ds) == before

    missing = await owner.post(f"/w/{ws}/datasets/import", data={"csrf_token": token, "dataset": "ds_nope"},
                               files={"file": ("x.jsonl", line.encode(), "application/x-ndjson")})
    assert missing.status_code == 404 and 'id="import-problem"' in missing.text and 'id="import-form"' in missing.text


async def test_imports_are_for_members_of_the_workspace_with_a_token(
        world: World, seeded: Seeded, owner: httpx.AsyncClient, viewer: httpx.AsyncClient,
        outsider: httpx.AsyncClient) -> None:
    ws, ds = world.workspace_id, seeded.dataset_id
    upload = {"file": ("x.jsonl", b'{"key": "sneaky", "instruction": "x"}\n', "application/x-ndjson")}
    for path in (f"/w/{ws}/datasets", f"/w/{ws}/datasets/{ds}"):
        assert 'id="import-form"' not in (await viewer.get(path)).text
    viewer_token = await csrf_of(viewer, f"/w/{ws}/settings")
    for path, data in ((f"/w/{ws}/datasets/{ds}/import", {}), (f"/w/{ws}/datasets/import", {"dataset": "sneaky"})):
        refused = await viewer.post(path, data={"csrf_token": viewer_token, "format": "jsonl", **data}, files=upload)
        assert refused.status_code == 403, path
    outsider_token = await csrf_of(outsider, "/workspaces")
    for path in (f"/w/{ws}/datasets/{ds}/import", f"/w/{ws}/datasets/import",
                 f"/w/{world.other_workspace_id}/datasets/{ds}/import"):
        refused = await outsider.post(path, data={"csrf_token": outsider_token, "dataset": "sneaky"}, files=upload)
        assert refused.status_code == 404, path
        assert seeded.dataset_name not in refused.text
    for token in (None, "forged"):
        body = {"format": "jsonl"} if token is None else {"format": "jsonl", "csrf_token": token}
        refused = await owner.post(f"/w/{ws}/datasets/{ds}/import", data=body, files=upload)
        assert refused.status_code == 403 and "CSRF" in refused.text
    assert await _versions(world, ds) == [1]
    assert (await world.api.get("/api/v1/datasets/sneaky")).status_code == 404
    assert (await world.other_api.get("/api/v1/datasets/sneaky")).status_code == 404
