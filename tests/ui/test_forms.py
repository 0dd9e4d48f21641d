"""Forms do what they say: scores, datasets and tasks (JSON errors named precisely, files uploaded),
members, API keys shown once and revocable, and storage settings encrypted with a working connection test."""

from __future__ import annotations

import uuid

import httpx
import pytest
from sqlalchemy import select

from rollout_server.models import Membership, WorkspaceStorage
from tests.support.s3 import S3Server
from tests.ui.conftest import PASSWORD, World, csrf_of
from tests.ui.seed import Seeded


async def test_add_score_and_annotation(world: World, seeded: Seeded, owner: httpx.AsyncClient) -> None:
    ws, rid = world.workspace_id, seeded.rollout_ids[1]
    token = await csrf_of(owner, f"/w/{ws}/rollouts/{rid}")
    response = await owner.post(f"/w/{ws}/rollouts/{rid}/scores", data={
        "csrf_token": token, "name": "reward", "data_type": "number", "value": "0.25", "comment": "half right"})
    assert response.status_code == 303
    page = await owner.get(response.headers["location"])
    assert "Score &#39;reward&#39; added." in page.text and "half right" in page.text
    detail = (await world.api.get(f"/api/v1/rollouts/{rid}")).json()
    assert detail["reward"] == 0.25  # the run's reward score sets the reward, exactly as through the API
    assert detail["scores"][-1]["source"] == "human" and detail["scores"][-1]["author"] == "owner@alpha.test"

    note = await owner.post(f"/w/{ws}/rollouts/{rid}/scores", data={
        "csrf_token": token, "name": "note", "data_type": "text", "value": "", "comment": "check the citation"})
    assert note.status_code == 303
    bad = await owner.post(f"/w/{ws}/rollouts/{rid}/scores", data={
        "csrf_token": token, "name": "reward", "data_type": "number", "value": "lots"})
    assert bad.status_code == 422 and "&#39;lots&#39; is not one" in bad.text


async def test_create_dataset_reports_json_errors_precisely(world: World, owner: httpx.AsyncClient) -> None:
    ws = world.workspace_id
    token = await csrf_of(owner, f"/w/{ws}/datasets")
    bad = await owner.post(f"/w/{ws}/datasets", data={
        "csrf_token": token, "name": "contracts", "key": "c-1", "instruction": "Who pays?",
        "input": '{\n  "clause": 1,\n  "party": tenant\n}', "metadata": "[1, 2]"})
    assert bad.status_code == 422
    assert "Input is not valid JSON: Expecting value at line 3, column 12" in bad.text
    assert "Metadata must be a JSON object" in bad.text and "not an array" in bad.text
    assert "tenant" in bad.text  # the typed text is kept in the form

    files = {"files": ("terms.txt", b"Clause 1: the tenant pays.\n", "text/plain")}
    good = await owner.post(f"/w/{ws}/datasets", data={
        "csrf_token": token, "name": "contracts", "key": "c-1", "instruction": "Who pays?",
        "input": '{"clause": 1}', "expected_output": "the tenant"}, files=files)
    assert good.status_code == 303, good.text[:2000]
    page = await owner.get(good.headers["location"])
    assert "c-1" in page.text and "terms.txt" in page.text
    task = (await world.api.get("/api/v1/datasets/contracts/tasks/c-1")).json()
    assert task["input"] == {"clause": 1} and task["expected_output"] == "the tenant"
    assert task["files"][0]["name"] == "terms.txt"
    download = await owner.get(f"/w/{ws}/files/{task['files'][0]['id']}")
    assert download.content == b"Clause 1: the tenant pays.\n"
    assert download.headers["content-disposition"].startswith("attachment")

    duplicate = await owner.post(f"/w/{ws}/datasets", data={"csrf_token": token, "name": "contracts"})
    assert duplicate.status_code == 422 and "already exists" in duplicate.text


async def test_add_and_edit_a_task_make_new_versions(world: World, seeded: Seeded, owner: httpx.AsyncClient) -> None:
    ws, ds = world.workspace_id, seeded.dataset_id
    token = await csrf_of(owner, f"/w/{ws}/datasets/{ds}/new-task")
    added = await owner.post(f"/w/{ws}/datasets/{ds}/tasks", data={
        "csrf_token": token, "key": "paper-4", "instruction": "Who wrote it?", "input": '{"style": "short"}',
        "expected_format": "json", "expected_output": '["Vaswani"]'})
    assert added.status_code == 303, added.text[:1500]
    edited = await owner.post(f"/w/{ws}/datasets/{ds}/tasks", data={
        "csrf_token": token, "original_key": "paper-1", "instruction": "Summarise it in 10 words.",
        "input": '{"max_words": 10}', "keep_files": []}, files={"files": ("extra.md", b"# more", "text/markdown")})
    assert edited.status_code == 303, edited.text[:1500]
    versions = (await world.api.get(f"/api/v1/datasets/{ds}/versions")).json()["items"]
    assert [v["number"] for v in versions][:3] == [3, 2, 1]
    assert (versions[0]["updated"], versions[1]["added"]) == (1, 1)
    task = (await world.api.get(f"/api/v1/datasets/{ds}/tasks/paper-1")).json()
    assert task["instruction"] == "Summarise it in 10 words." and [f["name"] for f in task["files"]] == ["extra.md"]
    page = await owner.get(f"/w/{ws}/datasets/{ds}?version=1")
    assert "used by" in page.text and f"run {seeded.eval_run}" in page.text  # which runs used which version
    search = await owner.get(f"/w/{ws}/datasets/{ds}?q=who+wrote")
    assert "paper-4" in search.text and "paper-2" not in search.text


async def test_api_keys_are_shown_once_and_revoke_for_real(world: World, owner: httpx.AsyncClient) -> None:
    ws = world.workspace_id
    token = await csrf_of(owner, f"/w/{ws}/settings")
    created = await owner.post(f"/w/{ws}/settings/keys", data={"csrf_token": token, "name": "ci"})
    assert created.status_code == 200
    secret = created.text.split('id="new-key-secret">')[1].split("<")[0]
    assert secret.startswith("rk_")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=world.app), base_url="http://testserver",
                                 headers={"authorization": f"Bearer {secret}"}) as client:
        assert (await client.get("/api/v1/runs")).status_code == 200
        again = await owner.get(f"/w/{ws}/settings")
        assert secret not in again.text and secret[:10] in again.text
        key_id = again.text.split("/settings/keys/")[-1].split("/revoke")[0]
        revoked = await owner.post(f"/w/{ws}/settings/keys/{key_id}/revoke", data={"csrf_token": token})
        assert revoked.status_code == 303
        assert (await client.get("/api/v1/runs")).status_code == 401


async def test_members_roles_and_the_last_owner(world: World, owner: httpx.AsyncClient) -> None:
    ws = world.workspace_id
    token = await csrf_of(owner, f"/w/{ws}/settings")
    added = await owner.post(f"/w/{ws}/settings/members", data={
        "csrf_token": token, "email": "newbie@alpha.test", "role": "viewer", "password": "a-long-password"})
    assert added.status_code == 303
    async with world.client() as client:
        page_token = await csrf_of(client)
        signed = await client.post("/login", data={"email": "newbie@alpha.test", "password": "a-long-password",
                                                   "csrf_token": page_token})
        assert signed.status_code == 303
        assert (await client.get(f"/w/{ws}/traces")).status_code == 200
    with world.ctx.db.reading() as session:
        owner_id = session.scalar(select(Membership.user_id).where(Membership.workspace_id == ws,
                                                                   Membership.role == "owner"))
    demote = await owner.post(f"/w/{ws}/settings/members/{owner_id}", data={"csrf_token": token, "role": "member"})
    assert demote.status_code == 409 and "at least one owner" in demote.text

    admin = await world.signed_in("admin@alpha.test", PASSWORD)
    admin_token = await csrf_of(admin, f"/w/{ws}/settings")
    grab = await admin.post(f"/w/{ws}/settings/members", data={
        "csrf_token": admin_token, "email": "boss@alpha.test", "role": "owner", "password": "a-long-password"})
    assert grab.status_code == 403  # only owners make owners
    await admin.aclose()


@pytest.mark.s3
async def test_storage_settings_are_encrypted_and_tested(world: World, owner: httpx.AsyncClient,
                                                          s3_server: S3Server) -> None:
    ws = world.workspace_id
    bucket = s3_server.create_bucket(f"ui-{uuid.uuid4().hex[:8]}")
    token = await csrf_of(owner, f"/w/{ws}/settings")
    form = {"csrf_token": token, "endpoint_url": s3_server.endpoint_url, "region": "us-east-1", "bucket": bucket,
            "prefix": "ui", "access_key_id": "AKIAEXAMPLEKEY", "secret_access_key": "very-secret-value"}
    tested = await owner.post(f"/w/{ws}/settings/storage", data={**form, "action": "test"})
    assert tested.status_code == 200 and "Connected" in tested.text, tested.text[-3000:]
    saved = await owner.post(f"/w/{ws}/settings/storage", data={**form, "action": "save"})
    assert saved.status_code == 303
    with world.ctx.db.reading() as session:
        row = session.scalar(select(WorkspaceStorage).where(WorkspaceStorage.workspace_id == ws))
    assert row is not None and row.bucket == bucket
    assert "very-secret-value" not in (row.secret_access_key_encrypted or "")
    page = await owner.get(f"/w/{ws}/settings")
    assert "very-secret-value" not in page.text and "saved (encrypted)" in page.text
    # Blank credentials keep the saved ones: the test still connects.
    retest = await owner.post(f"/w/{ws}/settings/storage", data={**form, "access_key_id": "", "secret_access_key": "",
                                                                 "action": "test"})
    assert "Connected" in retest.text
    broken = await owner.post(f"/w/{ws}/settings/storage", data={**form, "endpoint_url": "http://127.0.0.1:9",
                                                                 "action": "test"})
    assert "Cannot write to s3://" in broken.text
