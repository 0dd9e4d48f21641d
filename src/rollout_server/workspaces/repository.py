"""Queries for workspaces, users, memberships and API keys."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from ..models import ApiKey, Membership, User, Workspace


class WorkspaceRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def get(self, workspace_id: str) -> Workspace | None:
        return self.session.get(Workspace, workspace_id)

    def get_by_name(self, name: str) -> Workspace | None:
        return self.session.scalar(select(Workspace).where(Workspace.name == name))

    def list_all(self) -> list[Workspace]:
        return list(self.session.scalars(select(Workspace).order_by(Workspace.created_at)))

    def add(self, workspace: Workspace) -> Workspace:
        self.session.add(workspace)
        self.session.flush()
        return workspace

    def take_run_number(self, workspace_id: str) -> int:
        """Reserve the next run number; the UPDATE takes the row lock so concurrent starts never collide."""
        number = self.session.scalar(
            update(Workspace)
            .where(Workspace.id == workspace_id)
            .values(next_run_number=Workspace.next_run_number + 1)
            .returning(Workspace.next_run_number)
        )
        assert number is not None
        return number - 1


class UserRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def get(self, user_id: str) -> User | None:
        return self.session.get(User, user_id)

    def get_by_email(self, email: str) -> User | None:
        return self.session.scalar(select(User).where(User.email == email.lower()))

    def add(self, user: User) -> User:
        self.session.add(user)
        self.session.flush()
        return user

    def count(self) -> int:
        return len(self.session.scalars(select(User.id).limit(1)).all())

    def membership(self, workspace_id: str, user_id: str) -> Membership | None:
        return self.session.get(Membership, (workspace_id, user_id))

    def set_membership(self, workspace_id: str, user_id: str, role: str) -> Membership:
        membership = self.membership(workspace_id, user_id)
        if membership is None:
            membership = Membership(workspace_id=workspace_id, user_id=user_id, role=role)
            self.session.add(membership)
        else:
            membership.role = role
        self.session.flush()
        return membership

    def workspaces_of(self, user_id: str) -> list[tuple[Workspace, str]]:
        rows = self.session.execute(
            select(Workspace, Membership.role)
            .join(Membership, Membership.workspace_id == Workspace.id)
            .where(Membership.user_id == user_id)
            .order_by(Workspace.name)
        )
        return [(workspace, role) for workspace, role in rows]

    def members_of(self, workspace_id: str) -> list[tuple[User, str]]:
        rows = self.session.execute(
            select(User, Membership.role)
            .join(Membership, Membership.user_id == User.id)
            .where(Membership.workspace_id == workspace_id)
            .order_by(User.email)
        )
        return [(user, role) for user, role in rows]


class ApiKeyRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def get_active_by_hash(self, key_hash: str) -> ApiKey | None:
        return self.session.scalar(
            select(ApiKey).where(ApiKey.key_hash == key_hash, ApiKey.revoked_at.is_(None))
        )

    def get_in_workspace(self, workspace_id: str, key_id: str) -> ApiKey | None:
        return self.session.scalar(select(ApiKey).where(ApiKey.id == key_id, ApiKey.workspace_id == workspace_id))

    def list_for_workspace(self, workspace_id: str) -> list[ApiKey]:
        return list(
            self.session.scalars(
                select(ApiKey).where(ApiKey.workspace_id == workspace_id).order_by(ApiKey.created_at)
            )
        )

    def add(self, key: ApiKey) -> ApiKey:
        self.session.add(key)
        self.session.flush()
        return key

    def touch(self, key_id: str, when: datetime) -> None:
        self.session.execute(update(ApiKey).where(ApiKey.id == key_id).values(last_used_at=when))
