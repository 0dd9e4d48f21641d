"""Sign-in, sign-out, the workspace picker and the root redirect."""

from __future__ import annotations

import math
import secrets
from functools import cache

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from ...api.deps import Ctx
from ...auth.passwords import hash_password, verify_password
from ...auth.throttle import SignInThrottle
from ...errors import InvalidInput
from ...models import User
from ...workspaces import service as workspaces
from ...workspaces.repository import UserRepository
from ..deps import CsrfChecked, SessionDep, SignedIn, WorkspaceAccess
from ..session import UiSession
from ..templating import render

router = APIRouter()


def safe_next(value: str | None) -> str:
    """Only same-site paths: never `//host` or `https://…`, so sign-in cannot redirect elsewhere."""
    if not value or not value.startswith("/") or value.startswith("//") or "\\" in value:
        return "/"
    return value


@router.get("/login")
def login_page(request: Request, session: SessionDep, next: str | None = None) -> Response:
    return render(request, "auth/login.html", {"next": safe_next(next), "error": None, "email": ""})


@router.post("/login", dependencies=[CsrfChecked])
async def login(request: Request, ctx: Ctx, session: SessionDep) -> Response:
    form = await request.form()
    email = str(form.get("email") or "").strip().lower()
    password = str(form.get("password") or "")
    target = safe_next(str(form.get("next") or "/"))
    throttle, address = _throttle(request)
    wait = throttle.retry_after(email, address)
    if wait is not None:
        return _paused(render(request, "auth/login.html", {
            "next": target, "email": email, "error": f"Too many failed sign-ins. Try again in {_minutes(wait)}.",
        }, status_code=429), wait)

    def check() -> tuple[bool, User | None]:
        with ctx.db.reading() as db:
            found = UserRepository(db).get_by_email(email) if email else None
        # Verify even for an unknown email, so the answer time does not tell which emails exist; argon2
        # costs ~50 ms of CPU, so it runs off the event loop.
        matches = verify_password(found.password_hash if found else _dummy_hash(), password)
        return matches and found is not None, found

    ok, user = await run_in_threadpool(check)
    if not ok or user is None:
        throttle.failed(email, address)
        return render(request, "auth/login.html",
                      {"next": target, "error": "Wrong email or password.", "email": email}, status_code=401)
    throttle.succeeded(email)
    session.sign_in(user.id, user.password_hash or "")
    return RedirectResponse(target, status_code=303)


@router.get("/account")
def account_page(request: Request, user: SignedIn) -> Response:
    return render(request, "auth/account.html", {"user": user, "error": None})


@router.post("/account/password", dependencies=[CsrfChecked])
async def change_password(request: Request, ctx: Ctx, session: SessionDep, user: SignedIn) -> Response:
    form = await request.form()
    current, new, repeat = (str(form.get(name) or "") for name in ("current", "new", "repeat"))
    throttle, address = _throttle(request)

    def again(error: str, status: int) -> Response:
        return render(request, "auth/account.html", {"user": user, "error": error}, status_code=status)

    # Guessing the current password here is guessing a sign-in: the same throttle counts it.
    wait = throttle.retry_after(user.email, address)
    if wait is not None:
        return _paused(again(f"Too many wrong passwords. Try again in {_minutes(wait)}.", 429), wait)
    if new != repeat:
        return again("The two new passwords differ.", 422)

    def apply() -> tuple[str | None, str]:
        with ctx.db.transaction() as db:
            found = UserRepository(db).get(user.id)
            if found is None or not verify_password(found.password_hash or _dummy_hash(), current):
                return "wrong", ""
            try:
                workspaces.set_password(db, found, new, field="new")
            except InvalidInput as error:
                return error.detail, ""
            return None, found.password_hash or ""

    problem, new_hash = await run_in_threadpool(apply)
    if problem == "wrong":
        throttle.failed(user.email, address)
        return again("The current password is not right.", 403)
    if problem is not None:
        return again(problem, 422)
    # This browser stays signed in with the new password; sessions holding the old one are over.
    session.sign_in(user.id, new_hash)
    session.flash = "Password changed. Other browsers signed in as you are signed out."
    return RedirectResponse("/account", status_code=303)


@router.post("/logout", dependencies=[CsrfChecked])
def logout(session: SessionDep) -> Response:
    fresh = UiSession()
    session.user_id, session.csrf, session.issued, session.changed = None, fresh.csrf, fresh.issued, True
    return RedirectResponse("/login", status_code=303)


@router.get("/")
def home(ctx: Ctx, user: SignedIn) -> Response:
    with ctx.db.reading() as db:
        workspaces = UserRepository(db).workspaces_of(user.id)
    if len(workspaces) == 1:
        return RedirectResponse(f"/w/{workspaces[0][0].id}/traces", status_code=303)
    return RedirectResponse("/workspaces", status_code=303)


@router.get("/workspaces")
def workspace_picker(request: Request, ctx: Ctx, user: SignedIn) -> Response:
    with ctx.db.reading() as db:
        workspaces = UserRepository(db).workspaces_of(user.id)
    return render(request, "auth/workspaces.html", {"user": user, "workspaces": workspaces, "access": None})


@router.get("/w/{workspace_id}")
def workspace_home(access: WorkspaceAccess) -> Response:
    return RedirectResponse(f"/w/{access.workspace_id}/traces", status_code=303)


def _throttle(request: Request) -> tuple[SignInThrottle, str | None]:
    """The app's sign-in throttle and the client address it counts by."""
    throttle: SignInThrottle = request.app.state.sign_in_throttle
    return throttle, request.client.host if request.client else None


def _paused(response: Response, wait: int) -> Response:
    response.headers["retry-after"] = str(wait)
    return response


def _minutes(wait: int) -> str:
    minutes = max(1, math.ceil(wait / 60))
    return f"{minutes} minute{'s' if minutes > 1 else ''}"


@cache
def _dummy_hash() -> str:
    return hash_password(secrets.token_hex(16))
