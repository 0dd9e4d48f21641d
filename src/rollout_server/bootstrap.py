"""First start: an admin, a workspace and an API key for an empty database; headless keys; demo content."""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from .auth.keys import hash_key
from .config import Settings
from .context import AppContext
from .models import ApiKey, User
from .workspaces import service as workspaces
from .workspaces.repository import WorkspaceRepository

CREDENTIALS_FILE = "initial-credentials.txt"


@dataclass
class FirstStart:
    email: str
    password: str
    workspace_id: str
    workspace_name: str
    api_key: str
    credentials_path: Path


def ensure_initial_setup(ctx: AppContext) -> FirstStart | None:
    """Create the first admin, workspace and key on an empty database; returns them only that once.
    On later starts, make sure ROLLOUT_INIT_API_KEY (if set) exists, for headless deployments."""
    try:
        return _initial_setup(ctx)
    except IntegrityError:
        # Another worker process of the same server did the first start at the same moment.
        return None


def _initial_setup(ctx: AppContext) -> FirstStart | None:
    settings = ctx.settings
    with ctx.db.transaction() as session:
        has_users = bool(session.scalar(select(func.count()).select_from(User)))
        if has_users:
            if settings.init_api_key:
                _ensure_key(session, settings)
            return None
        password = settings.init_admin_password or secrets.token_urlsafe(12)
        user = workspaces.create_user(session, settings.init_admin_email, password, name="Admin", is_superuser=True)
        workspace = WorkspaceRepository(session).get_by_name(settings.init_workspace) or workspaces.create_workspace(
            session, settings.init_workspace
        )
        workspaces.add_member(session, workspace.id, user.id, "owner")
        created = workspaces.create_api_key(
            session, workspace.id, "initial key", secret=settings.init_api_key, created_by=user.id
        )
    path = write_credentials(settings, settings.init_admin_email, password, workspace.name, created.secret)
    return FirstStart(settings.init_admin_email, password, workspace.id, workspace.name, created.secret, path)


def _ensure_key(session: object, settings: Settings) -> None:
    from sqlalchemy.orm import Session

    assert isinstance(session, Session) and settings.init_api_key
    if session.scalar(select(ApiKey.id).where(ApiKey.key_hash == hash_key(settings.init_api_key))):
        return
    repo = WorkspaceRepository(session)
    workspace = repo.get_by_name(settings.init_workspace) or workspaces.create_workspace(
        session, settings.init_workspace
    )
    workspaces.create_api_key(session, workspace.id, "init key", secret=settings.init_api_key)


def write_credentials(settings: Settings, email: str, password: str, workspace: str, api_key: str) -> Path:
    data_dir = settings.resolved_data_dir
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / CREDENTIALS_FILE
    text = (
        "# Rollout: the first admin and API key, written once at first start. Keep this file private.\n"
        f"url={settings.base_url}\nemail={email}\npassword={password}\nworkspace={workspace}\napi_key={api_key}\n"
    )
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.chmod(path, 0o600)
    return path


def banner(settings: Settings, first: FirstStart | None) -> str:
    lines = ["", f"  Rollout is running at {settings.base_url}", ""]
    if first:
        lines += [
            f"  Sign in:   {first.email} / {first.password}",
            f"  API key:   {first.api_key}",
            f"  Workspace: {first.workspace_name}",
            f"  (saved to {first.credentials_path}, mode 0600; shown only this once)",
            "",
            "  Try it:",
            f"    export ROLLOUT_BASE_URL={settings.base_url} ROLLOUT_API_KEY={first.api_key}",
            f"    curl -H \"Authorization: Bearer $ROLLOUT_API_KEY\" {settings.base_url}/api/v1/runs",
        ]
    else:
        path = settings.resolved_data_dir / CREDENTIALS_FILE
        hint = f"see {path}" if path.exists() else "created at first start"
        lines += [f"  Login and API key: {hint}"]
    return "\n".join(lines) + "\n"
