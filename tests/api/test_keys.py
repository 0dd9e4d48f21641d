"""API keys: the secret is shown once, stored only as a hash, revocable at once, and marked when used."""

from __future__ import annotations

import json
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import MetaData, select
from sqlalchemy.engine import make_url

from rollout_server.app import create_app
from rollout_server.context import AppContext
from tests.api.factories import assert_problem, create_key
from tests.conftest import Tenant

API = "/api/v1"


@asynccontextmanager
async def client_with(ctx: AppContext, secret: str) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=create_app(context=ctx))
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver",
                                 headers={"authorization": f"Bearer {secret}"}) as client:
        yield client


async def _listed(client: httpx.AsyncClient) -> dict[str, dict[str, Any]]:
    response = await client.get(f"{API}/keys")
    assert response.status_code == 200, response.text
    return {key["id"]: key for key in response.json()["items"]}


async def test_a_new_key_shows_its_secret_once(ctx: AppContext, api: Tenant, other: Tenant) -> None:
    created = await create_key(api.client, "ci")
    secret = created["secret"]
    assert len(secret) >= 32 and created["name"] == "ci" and created["revoked_at"] is None
    assert secret.startswith(created["prefix"]) and len(created["prefix"]) <= len(secret) // 3

    listing = await api.client.get(f"{API}/keys")
    assert secret not in listing.text
    keys = {key["id"]: key for key in listing.json()["items"]}
    assert created["id"] in keys and all("secret" not in key for key in keys.values())
    assert keys[created["id"]]["prefix"] == created["prefix"]
    assert created["id"] not in await _listed(other.client)

    async with client_with(ctx, secret) as client:
        workspace = await client.get(f"{API}/workspace")
        assert workspace.status_code == 200 and workspace.json()["id"] == api.workspace_id
    # The displayed prefix is not a key.
    async with client_with(ctx, created["prefix"]) as client:
        assert_problem(await client.get(f"{API}/workspace"), 401)


async def test_last_used_at_is_kept(ctx: AppContext, api: Tenant) -> None:
    created = await create_key(api.client, "fresh")
    assert (await _listed(api.client))[created["id"]]["last_used_at"] is None
    async with client_with(ctx, created["secret"]) as client:
        assert (await client.get(f"{API}/runs")).status_code == 200
        used = (await _listed(client))[created["id"]]
    assert used["last_used_at"] is not None
    assert datetime.fromisoformat(used["last_used_at"]) >= datetime.fromisoformat(used["created_at"])


async def test_a_revoked_key_is_refused_at_once(ctx: AppContext, api: Tenant) -> None:
    created = await create_key(api.client, "short-lived")
    async with client_with(ctx, created["secret"]) as client:
        # Used first, so any lookup cache holds it when it is revoked.
        assert (await client.get(f"{API}/workspace")).status_code == 200
        revoked = await api.client.delete(f"{API}/keys/{created['id']}")
        assert revoked.status_code == 200 and revoked.json()["revoked_at"] is not None
        for method, path in (("GET", "/workspace"), ("GET", "/runs"), ("POST", "/keys")):
            response = await client.request(method, API + path, json={"name": "sneaky"} if method == "POST" else None)
            problem = assert_problem(response, 401)
            assert "revoked" in problem["detail"]
    listed = (await _listed(api.client))[created["id"]]
    assert listed["revoked_at"] == revoked.json()["revoked_at"]
    # Revoking twice keeps the first time; the workspace's other keys are untouched.
    again = await api.client.delete(f"{API}/keys/{created['id']}")
    assert again.status_code == 200 and again.json()["revoked_at"] == listed["revoked_at"]
    assert (await api.client.get(f"{API}/workspace")).status_code == 200
    assert_problem(await api.client.delete(f"{API}/keys/key_01nosuchkey000000000000000"), 404)


def _text_of(value: Any) -> str:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("latin-1")
    if isinstance(value, dict | list):
        return json.dumps(value)
    return "" if value is None else str(value)


async def test_no_key_is_stored_in_plain_text(ctx: AppContext, api: Tenant, other: Tenant) -> None:
    created = await create_key(api.client, "hunted")
    async with client_with(ctx, created["secret"]) as client:
        assert (await client.get(f"{API}/workspace")).status_code == 200
    secrets = [api.api_key, other.api_key, created["secret"]]
    # The displayed prefix is kept on purpose; the rest of the secret must be nowhere.
    needles = secrets + [s[len(created["prefix"]):] for s in secrets]

    metadata = MetaData()
    with warnings.catch_warnings():  # SQLite cannot reflect expression indexes; only the columns matter here
        warnings.filterwarnings("ignore", message=".*expression-based index")
        metadata.reflect(bind=ctx.db.write_engine)
    assert "api_keys" in metadata.tables
    found: list[str] = []
    with ctx.db.write_engine.connect() as connection:
        key_rows = connection.execute(select(metadata.tables["api_keys"])).mappings().all()
        assert len(key_rows) >= 3
        for table in metadata.tables.values():
            for row in connection.execute(select(table)).mappings():
                for column, value in row.items():
                    text = _text_of(value)
                    found += [f"{table.name}.{column}" for needle in needles if needle in text]
    assert not found, f"an API key is stored in plain text in {found}"

    # On SQLite the whole database file (and its write-ahead log) can be searched, free pages included.
    database = make_url(ctx.db.url).database
    if ctx.db.dialect == "sqlite" and database:
        for path in (Path(database), Path(database + "-wal")):
            if path.exists():
                raw = path.read_bytes()
                assert not [s for s in needles if s.encode() in raw], f"an API key is in the bytes of {path.name}"
