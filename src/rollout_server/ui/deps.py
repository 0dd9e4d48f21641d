"""Request dependencies for pages: the session, the signed-in user, the workspace and role, CSRF checks.

Another workspace's pages answer 404 exactly like a page that does not exist; a role too low for a
form answers 403; a form without the session's CSRF token answers 403 before anything is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated
from urllib.parse import quote

from fastapi import Depends, Request

from ..api.deps import Ctx
from ..errors import Forbidden, NotFound
from ..models import User, Workspace
from ..workspaces.repository import UserRepository, WorkspaceRepository
from .session import UiSession, csrf_matches

ROLE_RANK = {"viewer": 0, "member": 1, "admin": 2, "owner": 3}


class SignInRequired(Exception):
    def __init__(self, next_url: str) -> None:
        super().__init__(next_url)
        self.next_url = next_url


class CsrfRejected(Forbidden):
    pass


def get_ui_session(request: Request) -> UiSession:
    session: UiSession | None = request.scope.get("state", {}).get("ui_session")
    if session is None:  # the middleware always sets one; this only guards misconfiguration
        session = UiSession(changed=True)
        request.scope.setdefault("state", {})["ui_session"] = session
    return session


SessionDep = Annotated[UiSession, Depends(get_ui_session)]


def _next_url(request: Request) -> str:
    path = request.url.path
    if request.url.query:
        path += "?" + request.url.query
    return quote(path, safe="/?=&%")


def get_user(request: Request, ctx: Ctx, session: SessionDep) -> User:
    if session.user_id:
        with ctx.db.reading() as db:
            user = UserRepository(db).get(session.user_id)
        # A session signed in with an earlier password (or before sessions carried the mark) is over.
        if user is not None and session.signed_in_with(user.password_hash):
            return user
    raise SignInRequired(_next_url(request))


SignedIn = Annotated[User, Depends(get_user)]


@dataclass
class Access:
    """The signed-in user inside one workspace they are a member of."""

    user: User
    workspace: Workspace
    role: str
    csrf: str

    @property
    def workspace_id(self) -> str:
        return self.workspace.id

    def can(self, role: str) -> bool:
        return ROLE_RANK.get(self.role, -1) >= ROLE_RANK[role]

    def require(self, role: str) -> None:
        if not self.can(role):
            raise Forbidden(f"Your role in {self.workspace.name} is {self.role}; this needs {role} or above.")


def get_access(workspace_id: str, ctx: Ctx, user: SignedIn, session: SessionDep) -> Access:
    with ctx.db.reading() as db:
        membership = UserRepository(db).membership(workspace_id, user.id)
        workspace = WorkspaceRepository(db).get(workspace_id) if membership else None
    if membership is None or workspace is None:
        raise NotFound(f"No workspace {workspace_id}.")
    return Access(user=user, workspace=workspace, role=membership.role, csrf=session.csrf)


WorkspaceAccess = Annotated[Access, Depends(get_access)]


async def check_csrf(request: Request, session: SessionDep) -> None:
    """Every state-changing request carries the session's token, as a form field or an X-CSRF-Token header."""
    token = request.headers.get("x-csrf-token")
    if not token:
        content_type = request.headers.get("content-type", "")
        if content_type.startswith(("application/x-www-form-urlencoded", "multipart/form-data")):
            form = await request.form()
            value = form.get("csrf_token")
            token = value if isinstance(value, str) else None
    if not csrf_matches(session, token):
        raise CsrfRejected("This form has expired or did not come from this site (missing or wrong CSRF token). "
                           "Reload the page and try again.")


CsrfChecked = Depends(check_csrf)
