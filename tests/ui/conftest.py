"""Fixtures for page tests: an app over ASGI, a workspace with an owner, a member and a viewer, another
workspace with its own owner, signed-in clients for each, and seeded data."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from sqlalchemy import update

from rollout_server.app import create_app
from rollout_server.context import AppContext
from rollout_server.models import Rollout
from rollout_server.workspaces import service as workspaces
from tests.ui.seed import Seeded, seed

PASSWORD = "correct-horse-battery"
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


@dataclass
class World:
    app: Any
    ctx: AppContext
    workspace_id: str
    other_workspace_id: str
    api: httpx.AsyncClient
    other_api: httpx.AsyncClient

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.ASGITransport(app=self.app), base_url="http://testserver",
                                 follow_redirects=False)

    async def signed_in(self, email: str, password: str = PASSWORD) -> httpx.AsyncClient:
        client = self.client()
        await login(client, email, password)
        return client


async def csrf_of(client: httpx.AsyncClient, path: str = "/login") -> str:
    page = await client.get(path)
    found = CSRF.search(page.text)
    assert found, f"no CSRF field on {path}: {page.status_code} {page.text[:300]}"
    return found.group(1)


async def login(client: httpx.AsyncClient, email: str, password: str) -> httpx.Response:
    token = await csrf_of(client)
    response = await client.post("/login", data={"email": email, "password": password, "csrf_token": token,
                                                 "next": "/"})
    assert response.status_code == 303, response.text[:500]
    return response


def _make_users(ctx: AppContext) -> tuple[str, str, str, str]:
    with ctx.db.transaction() as session:
        alpha = workspaces.create_workspace(session, "alpha")
        beta = workspaces.create_workspace(session, "beta")
        for email, workspace, role in (("owner@alpha.test", alpha, "owner"), ("admin@alpha.test", alpha, "admin"),
                                       ("member@alpha.test", alpha, "member"), ("viewer@alpha.test", alpha, "viewer"),
                                       ("owner@beta.test", beta, "owner")):
            user = workspaces.create_user(session, email, PASSWORD)
            workspaces.add_member(session, workspace.id, user.id, role)
        alpha_key = workspaces.create_api_key(session, alpha.id, "seed").secret
        beta_key = workspaces.create_api_key(session, beta.id, "seed").secret
    return alpha.id, beta.id, alpha_key, beta_key


@pytest.fixture
async def world(ctx: AppContext) -> AsyncIterator[World]:
    app = create_app(context=ctx)
    alpha, beta, alpha_key, beta_key = _make_users(ctx)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver",
                                 headers={"authorization": f"Bearer {alpha_key}"}) as api, \
            httpx.AsyncClient(transport=transport, base_url="http://testserver",
                              headers={"authorization": f"Bearer {beta_key}"}) as other_api:
        yield World(app=app, ctx=ctx, workspace_id=alpha, other_workspace_id=beta, api=api, other_api=other_api)


def api_caller(client: httpx.AsyncClient) -> Any:
    async def call(method: str, path: str, **kwargs: Any) -> Any:
        response = await client.request(method, path, **kwargs)
        assert response.status_code < 300, f"{method} {path}: {response.status_code} {response.text[:500]}"
        return response.json()

    return call


def mark_discarded(ctx: AppContext, rollout_ids: list[str], reason: str) -> None:
    with ctx.db.transaction() as session:
        session.execute(update(Rollout).where(Rollout.id.in_(rollout_ids)).values(discarded=True,
                                                                                 discard_reason=reason))


@pytest.fixture
async def seeded(world: World) -> Seeded:
    data = await seed(api_caller(world.api))
    page = await world.api.get("/api/v1/rollouts", params={"run": str(data.training_run), "limit": 1000})
    items = page.json()["items"]
    mark_discarded(world.ctx, [r["id"] for r in items if r["step"] == 1 and r["group_key"] == "prompt-0"],
                   "zero advantage")
    return data


@pytest.fixture
async def owner(world: World) -> AsyncIterator[httpx.AsyncClient]:
    client = await world.signed_in("owner@alpha.test")
    yield client
    await client.aclose()


@pytest.fixture
async def viewer(world: World) -> AsyncIterator[httpx.AsyncClient]:
    client = await world.signed_in("viewer@alpha.test")
    yield client
    await client.aclose()


@pytest.fixture
async def outsider(world: World) -> AsyncIterator[httpx.AsyncClient]:
    client = await world.signed_in("owner@beta.test")
    yield client
    await client.aclose()
