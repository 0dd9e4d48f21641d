"""Queries for files."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..models import File


class FileRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def get(self, workspace_id: str, file_id: str) -> File | None:
        return self.session.scalar(select(File).where(File.id == file_id, File.workspace_id == workspace_id))

    def get_many(self, workspace_id: str, file_ids: Iterable[str]) -> dict[str, File]:
        ids = list(set(file_ids))
        if not ids:
            return {}
        rows = self.session.scalars(select(File).where(File.workspace_id == workspace_id, File.id.in_(ids)))
        return {row.id: row for row in rows}

    def find_same(self, workspace_id: str, sha256: str, name: str) -> File | None:
        return self.session.scalar(
            select(File).where(File.workspace_id == workspace_id, File.sha256 == sha256, File.name == name,
                               File.external_key.is_(None)).limit(1)
        )

    def find_reference(self, workspace_id: str, key: str, sha256: str, name: str) -> File | None:
        return self.session.scalar(
            select(File).where(File.workspace_id == workspace_id, File.external_key == key, File.sha256 == sha256,
                               File.name == name).limit(1)
        )

    def by_sha256(self, workspace_id: str, sha256: str) -> list[File]:
        """Files holding these bytes, stored copies first."""
        rows = self.session.scalars(select(File).where(File.workspace_id == workspace_id, File.sha256 == sha256))
        return sorted(rows, key=lambda f: (f.external_key is not None, f.created_at, f.id))

    def add(self, file: File) -> File:
        self.session.add(file)
        self.session.flush()
        return file
