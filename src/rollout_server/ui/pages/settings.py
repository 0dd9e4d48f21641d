"""Workspace settings: members and roles, API keys (shown once, revocable), S3 storage with a connection
test. Everyone in the workspace can read this page; only admins and owners change anything."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from ...api.deps import Ctx, key_cache
from ...errors import AppError, Conflict, InvalidInput
from ...models.workspace import ROLES
from ...workspaces import service as workspaces
from ...workspaces.repository import UserRepository
from .. import storage_settings as storage
from ..deps import Access, CsrfChecked, WorkspaceAccess
from ..templating import flash, render

router = APIRouter()


def _page(request: Request, access: Access, ctx: Ctx, status_code: int = 200, **extra: Any) -> Response:
    with ctx.db.reading() as session:
        members = workspaces.list_members(session, access.workspace_id)
        keys = workspaces.list_api_keys(session, access.workspace_id)
        saved = storage.get_settings(session, access.workspace_id)
    context = {"access": access, "nav": "settings", "members": members, "keys": keys, "storage": saved,
               "roles": ROLES, "new_secret": None, "error": None, "storage_message": None,
               "storage_ok": None, "storage_form": None, **extra}
    return render(request, "settings/page.html", context, status_code=status_code)


def _form(data: Any) -> dict[str, str]:
    return {k: v for k, v in data.items() if isinstance(v, str)}


@router.get("/w/{workspace_id}/settings")
def settings_page(request: Request, access: WorkspaceAccess, ctx: Ctx) -> Response:
    return _page(request, access, ctx)


@router.post("/w/{workspace_id}/settings/members", dependencies=[CsrfChecked])
async def add_member(request: Request, access: WorkspaceAccess, ctx: Ctx) -> Response:
    access.require("admin")
    form = _form(await request.form())
    email = form.get("email", "").strip().lower()
    role = form.get("role", "member")
    password = form.get("password") or None

    def work() -> None:
        if role == "owner":
            access.require("owner")
        with ctx.db.transaction() as session:
            user = UserRepository(session).get_by_email(email)
            if user is None:
                if not password:
                    raise InvalidInput(f"{email} has no account yet: give them a first password "
                                                  "(8+ characters) to create one.", field="password")
                user = workspaces.create_user(session, email, password)
            elif UserRepository(session).membership(access.workspace_id, user.id):
                raise Conflict(f"{email} is already a member; change their role in the table.")
            workspaces.add_member(session, access.workspace_id, user.id, role)

    try:
        await run_in_threadpool(work)
    except AppError as error:
        return _page(request, access, ctx, status_code=error.status, error=error.detail)
    flash(request, f"{email} added as {role}.")
    return RedirectResponse(f"/w/{access.workspace_id}/settings#members", status_code=303)


@router.post("/w/{workspace_id}/settings/members/{user_id}", dependencies=[CsrfChecked])
async def change_member(request: Request, user_id: str, access: WorkspaceAccess, ctx: Ctx) -> Response:
    access.require("admin")
    form = _form(await request.form())
    role = None if form.get("action") == "remove" else form.get("role", "")

    def work() -> None:
        with ctx.db.transaction() as session:
            workspaces.change_member(session, access.workspace_id, user_id, role, acting_role=access.role)

    try:
        await run_in_threadpool(work)
    except AppError as error:
        return _page(request, access, ctx, status_code=error.status, error=error.detail)
    flash(request, "Member removed." if role is None else f"Role changed to {role}.")
    return RedirectResponse(f"/w/{access.workspace_id}/settings#members", status_code=303)


@router.post("/w/{workspace_id}/settings/keys", dependencies=[CsrfChecked])
async def create_key(request: Request, access: WorkspaceAccess, ctx: Ctx) -> Response:
    access.require("admin")
    form = _form(await request.form())
    name = (form.get("name") or "").strip()[:200] or "api key"

    def work() -> str:
        with ctx.db.transaction() as session:
            return workspaces.create_api_key(session, access.workspace_id, name, created_by=access.user.id).secret

    secret = await run_in_threadpool(work)
    # Rendered straight away, never put in the (client-side) session: the secret is shown exactly once.
    return _page(request, access, ctx, new_secret={"name": name, "secret": secret})


@router.post("/w/{workspace_id}/settings/keys/{key_id}/revoke", dependencies=[CsrfChecked])
async def revoke_key(request: Request, key_id: str, access: WorkspaceAccess, ctx: Ctx) -> Response:
    access.require("admin")

    def work() -> None:
        with ctx.db.transaction() as session:
            key = workspaces.revoke_api_key(session, access.workspace_id, key_id)
        # Same as the API's revoke: this process refuses the key at once (others within the cache TTL).
        key_cache.revoke(key.id)

    await run_in_threadpool(work)
    flash(request, "API key revoked.")
    return RedirectResponse(f"/w/{access.workspace_id}/settings#keys", status_code=303)


@router.post("/w/{workspace_id}/settings/storage", dependencies=[CsrfChecked])
async def save_storage(request: Request, access: WorkspaceAccess, ctx: Ctx) -> Response:
    access.require("admin")
    values = _form(await request.form())
    secret = ctx.settings.resolved_secret_key()
    testing = values.get("action") == "test"

    def work() -> tuple[bool, str]:
        parsed = storage.parse_form(values)
        if testing:
            with ctx.db.reading() as session:
                saved = storage.get_settings(session, access.workspace_id)
            problem = storage.test_connection(storage.open_store(secret, parsed, saved))
            return problem is None, problem or f"Connected: wrote and deleted a probe in s3://{parsed.bucket}/{parsed.prefix}."
        with ctx.db.transaction() as session:
            storage.save_settings(session, secret, access.workspace_id, parsed, access.user.id)
        return True, "Storage settings saved; credentials are stored encrypted."

    try:
        ok, message = await run_in_threadpool(work)
    except AppError as error:
        return _page(request, access, ctx, status_code=error.status, storage_message=error.detail, storage_ok=False,
                     storage_form=values)
    if testing:
        return _page(request, access, ctx, storage_message=message, storage_ok=ok, storage_form=values)
    flash(request, message)
    return RedirectResponse(f"/w/{access.workspace_id}/settings#storage", status_code=303)
