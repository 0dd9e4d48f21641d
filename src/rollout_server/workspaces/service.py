"""Business rules for workspaces, users and API keys. Never commits: the caller owns the transaction."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from ..auth.keys import display_prefix, generate_key, hash_key
from ..auth.passwords import hash_password
from ..db.types import utcnow
from ..errors import Conflict, Forbidden, InvalidInput, NotFound
from ..ids import new_id
from ..models import ApiKey, User, Workspace
from ..models.workspace import ROLES
from .repository import ApiKeyRepository, UserRepository, WorkspaceRepository


@dataclass
class CreatedKey:
    key: ApiKey
    secret: str


def create_workspace(session: Session, name: str) -> Workspace:
    name = name.strip()
    if not name:
        raise InvalidInput("A workspace needs a name.", field="name")
    repo = WorkspaceRepository(session)
    if repo.get_by_name(name):
        raise Conflict(f"A workspace named '{name}' already exists.")
    return repo.add(Workspace(id=new_id("ws"), name=name, next_run_number=1))


def get_workspace(session: Session, workspace_id: str) -> Workspace:
    workspace = WorkspaceRepository(session).get(workspace_id)
    if workspace is None:
        raise NotFound(f"No workspace {workspace_id}.")
    return workspace


def resolve_workspace(session: Session, ref: str) -> Workspace:
    repo = WorkspaceRepository(session)
    workspace = repo.get(ref) or repo.get_by_name(ref)
    if workspace is None:
        raise NotFound(f"No workspace named or identified by '{ref}'.")
    return workspace


def create_api_key(
    session: Session, workspace_id: str, name: str, *, secret: str | None = None, created_by: str | None = None
) -> CreatedKey:
    secret = secret or generate_key()
    if len(secret) < 24:
        raise InvalidInput("An API key must be at least 24 characters long.", field="secret")
    repo = ApiKeyRepository(session)
    key_hash = hash_key(secret)
    if repo.get_active_by_hash(key_hash):
        raise Conflict("That API key is already in use.")
    key = repo.add(
        ApiKey(
            id=new_id("key"),
            workspace_id=workspace_id,
            name=name,
            prefix=display_prefix(secret),
            key_hash=key_hash,
            created_by=created_by,
        )
    )
    return CreatedKey(key=key, secret=secret)


def list_api_keys(session: Session, workspace_id: str) -> list[ApiKey]:
    return ApiKeyRepository(session).list_for_workspace(workspace_id)


def revoke_api_key(session: Session, workspace_id: str, key_id: str) -> ApiKey:
    key = ApiKeyRepository(session).get_in_workspace(workspace_id, key_id)
    if key is None:
        raise NotFound(f"No API key {key_id} in this workspace.")
    if key.revoked_at is None:
        key.revoked_at = utcnow()
        session.flush()
    return key


def create_user(
    session: Session, email: str, password: str | None, *, name: str | None = None, is_superuser: bool = False
) -> User:
    email = email.strip().lower()
    if "@" not in email:
        raise InvalidInput(f"'{email}' is not an email address.", field="email")
    if password is not None:
        check_password(password)
    repo = UserRepository(session)
    if repo.get_by_email(email):
        raise Conflict(f"A user with email {email} already exists.")
    return repo.add(
        User(
            id=new_id("user"),
            email=email,
            name=name,
            password_hash=hash_password(password) if password else None,
            is_superuser=is_superuser,
        )
    )


def check_password(password: str, field: str = "password") -> None:
    if len(password) < 8:
        raise InvalidInput("A password needs at least 8 characters.", field=field)
    if len(password) > 1024:
        raise InvalidInput("A password has at most 1,024 characters.", field=field)


def set_password(session: Session, user: User, password: str, *, field: str = "password") -> None:
    """A new password. Browser sessions are bound to the password hash, so the ones signed in with the old
    password end (ui/session.py)."""
    check_password(password, field)
    user.password_hash = hash_password(password)
    session.flush()


def find_user(session: Session, email: str) -> User:
    user = UserRepository(session).get_by_email(email.strip().lower())
    if user is None:
        raise NotFound(f"No user with email {email.strip().lower()}.")
    return user


def add_member(session: Session, workspace_id: str, user_id: str, role: str) -> None:
    if role not in ROLES:
        raise InvalidInput(f"Unknown role '{role}'; use one of {', '.join(ROLES)}.", field="role")
    UserRepository(session).set_membership(workspace_id, user_id, role)


def list_members(session: Session, workspace_id: str) -> list[tuple[User, str]]:
    return UserRepository(session).members_of(workspace_id)


def change_member(session: Session, workspace_id: str, user_id: str, role: str | None, *, acting_role: str) -> None:
    """Set a member's role, or remove them (role None). Only an owner grants, changes or removes the owner
    role, and a workspace always keeps at least one owner."""
    if role is not None and role not in ROLES:
        raise InvalidInput(f"Unknown role '{role}'; use one of {', '.join(ROLES)}.", field="role")
    repo = UserRepository(session)
    membership = repo.membership(workspace_id, user_id)
    if membership is None:
        raise NotFound(f"No member {user_id} in this workspace.")
    if "owner" in (membership.role, role) and acting_role != "owner":
        raise Forbidden("Only an owner can grant, change or remove the owner role.")
    if membership.role == "owner" and role != "owner":
        owners = [u for u, r in repo.members_of(workspace_id) if r == "owner"]
        if len(owners) <= 1:
            raise Conflict("A workspace keeps at least one owner; make someone else owner first.")
    if role is None:
        session.delete(membership)
    else:
        membership.role = role
    session.flush()
