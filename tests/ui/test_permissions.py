"""Who may do what: another workspace's user sees 404 for every page and form of this workspace, a viewer
can post no form, and no form is accepted without the session's CSRF token. Every UI form route is listed
here, and a test checks the list against the app's routes so a new form cannot be forgotten."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from rollout_server.models import ApiKey, Dataset, Membership, Score, WorkspaceStorage
from tests.ui.conftest import World, csrf_of
from tests.ui.seed import Seeded


def form_posts(world: World, seeded: Seeded, key_id: str, user_id: str) -> list[tuple[str, dict[str, Any]]]:
    ws, rid, ds = world.workspace_id, seeded.rollout_ids[0], seeded.dataset_id
    return [
        (f"/w/{ws}/rollouts/{rid}/scores", {"name": "x", "data_type": "number", "value": "1"}),
        (f"/w/{ws}/rollouts/{rid}/promote", {"dataset": "sneaky"}),
        (f"/w/{ws}/datasets", {"name": "sneaky"}),
        (f"/w/{ws}/datasets/{ds}/tasks", {"key": "sneaky", "instruction": "x"}),
        (f"/w/{ws}/datasets/import", {"dataset": "sneaky", "format": "jsonl"}),
        (f"/w/{ws}/datasets/{ds}/import", {"format": "jsonl", "mode": "replace"}),
        (f"/w/{ws}/settings/members", {"email": "new@x.test", "role": "owner", "password": "password-123"}),
        (f"/w/{ws}/settings/members/{user_id}", {"role": "owner"}),
        (f"/w/{ws}/settings/keys", {"name": "sneaky"}),
        (f"/w/{ws}/settings/keys/{key_id}/revoke", {}),
        (f"/w/{ws}/settings/storage", {"bucket": "b", "action": "save"}),
    ]


WORKSPACE_POST_TEMPLATES = {
    "/w/{workspace_id}/rollouts/{rollout_id}/scores", "/w/{workspace_id}/rollouts/{rollout_id}/promote",
    "/w/{workspace_id}/datasets",
    "/w/{workspace_id}/datasets/{dataset_ref}/tasks", "/w/{workspace_id}/settings/members",
    "/w/{workspace_id}/datasets/import", "/w/{workspace_id}/datasets/{dataset_ref}/import",
    "/w/{workspace_id}/settings/members/{user_id}", "/w/{workspace_id}/settings/keys",
    "/w/{workspace_id}/settings/keys/{key_id}/revoke", "/w/{workspace_id}/settings/storage",
}


def _routes(app: Any) -> list[Any]:
    found = []
    for route in app.routes:
        found.append(route)
        # FastAPI wraps an included router; its routes are on the original router.
        inner = getattr(route, "original_router", None) or getattr(route, "router", None)
        found.extend(_routes(inner) if inner is not None and hasattr(inner, "routes") else [])
    return found


def test_every_ui_form_route_is_covered(world: World) -> None:
    posts = {r.path for r in _routes(world.app) if "POST" in (getattr(r, "methods", None) or set())
             and getattr(r, "path", "").startswith("/w/")}
    assert posts == WORKSPACE_POST_TEMPLATES


def _ids(world: World) -> tuple[str, str]:
    with world.ctx.db.reading() as session:
        key_id = session.scalar(select(ApiKey.id).where(ApiKey.workspace_id == world.workspace_id))
        user_id = session.scalar(select(Membership.user_id).where(Membership.workspace_id == world.workspace_id,
                                                                  Membership.role == "viewer"))
    assert key_id and user_id
    return key_id, user_id


def _counts(world: World) -> tuple[int, ...]:
    with world.ctx.db.reading() as session:
        return (
            session.scalar(select(func.count()).select_from(Score)) or 0,
            session.scalar(select(func.count()).select_from(Dataset)) or 0,
            session.scalar(select(func.count()).select_from(Membership)) or 0,
            session.scalar(select(func.count()).select_from(ApiKey).where(ApiKey.revoked_at.is_(None))) or 0,
            session.scalar(select(func.count()).select_from(WorkspaceStorage)) or 0,
            session.scalar(select(func.count()).select_from(Membership).where(Membership.role == "owner")) or 0,
        )


async def test_another_workspace_cannot_open_any_page(world: World, seeded: Seeded,
                                                       outsider: httpx.AsyncClient) -> None:
    ws, rid = world.workspace_id, seeded.rollout_ids[0]
    pages = [
        f"/w/{ws}", f"/w/{ws}/traces", f"/w/{ws}/traces?group=workflow", f"/w/{ws}/runs",
        f"/w/{ws}/runs/{seeded.eval_run}", f"/w/{ws}/runs/{seeded.eval_run}/rollouts/1", f"/w/{ws}/rollouts/{rid}",
        f"/w/{ws}/rollouts/{rid}/events", f"/w/{ws}/compare?ids={rid}", f"/w/{ws}/runs/{seeded.training_run}/training",
        f"/w/{ws}/datasets", f"/w/{ws}/datasets/{seeded.dataset_id}", f"/w/{ws}/datasets/{seeded.dataset_id}/tasks/paper-1",
        f"/w/{ws}/datasets/{seeded.dataset_id}/new-task", f"/w/{ws}/settings",
        f"/w/{ws}/datasets/{seeded.dataset_id}/diff?from=0&to=1",
        f"/w/{ws}/datasets/{seeded.dataset_id}/export?format=jsonl",
    ]
    for path in pages:
        response = await outsider.get(path)
        assert response.status_code == 404, path
        assert seeded.dataset_name not in response.text
    # Alpha's IDs inside the outsider's own workspace are not found either.
    own = world.other_workspace_id
    for path in (f"/w/{own}/rollouts/{rid}", f"/w/{own}/datasets/{seeded.dataset_id}", f"/w/{own}/runs/1",
                 f"/w/{own}/compare?ids={rid}&ids={seeded.rollout_ids[1]}"):
        response = await outsider.get(path)
        assert response.status_code in (200, 404), path
        assert seeded.dataset_name not in response.text and "Summarise the paper" not in response.text


async def test_another_workspace_cannot_post_any_form(world: World, seeded: Seeded,
                                                       outsider: httpx.AsyncClient) -> None:
    key_id, user_id = _ids(world)
    token = await csrf_of(outsider, "/workspaces")
    before = _counts(world)
    for path, data in form_posts(world, seeded, key_id, user_id):
        response = await outsider.post(path, data={**data, "csrf_token": token})
        assert response.status_code == 404, path
    assert _counts(world) == before


async def test_a_viewer_cannot_post_any_form(world: World, seeded: Seeded, viewer: httpx.AsyncClient) -> None:
    key_id, user_id = _ids(world)
    token = await csrf_of(viewer, f"/w/{world.workspace_id}/settings")
    before = _counts(world)
    for path, data in form_posts(world, seeded, key_id, user_id):
        response = await viewer.post(path, data={**data, "csrf_token": token})
        assert response.status_code == 403, path
    assert _counts(world) == before
    page = await viewer.get(f"/w/{world.workspace_id}/rollouts/{seeded.rollout_ids[0]}")
    assert 'id="score-form"' not in page.text  # and the forms are not even offered


@pytest.mark.parametrize("token", [None, "", "forged-token"])
async def test_a_form_without_the_csrf_token_is_refused(world: World, seeded: Seeded, owner: httpx.AsyncClient,
                                                        token: str | None) -> None:
    key_id, user_id = _ids(world)
    before = _counts(world)
    for path, data in [*form_posts(world, seeded, key_id, user_id), ("/logout", {})]:
        body = dict(data) if token is None else {**data, "csrf_token": token}
        response = await owner.post(path, data=body)
        assert response.status_code == 403, path
        assert "CSRF" in response.text
    assert _counts(world) == before
    assert (await owner.get(f"/w/{world.workspace_id}/traces")).status_code == 200  # still signed in


async def test_the_login_form_needs_its_token_too(world: World) -> None:
    async with world.client() as client:
        await client.get("/login")
        response = await client.post("/login", data={"email": "owner@alpha.test", "password": "x"})
        assert response.status_code == 403


async def test_another_sessions_token_is_refused(world: World, seeded: Seeded, owner: httpx.AsyncClient,
                                                  viewer: httpx.AsyncClient) -> None:
    token_of_viewer = await csrf_of(viewer, f"/w/{world.workspace_id}/settings")
    response = await owner.post(f"/w/{world.workspace_id}/settings/keys",
                                data={"name": "x", "csrf_token": token_of_viewer})
    assert response.status_code == 403
