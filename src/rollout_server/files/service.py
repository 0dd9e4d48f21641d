"""Business rules for files: names are cleaned, identical bytes are stored once per workspace."""

from __future__ import annotations

import mimetypes
import unicodedata

from sqlalchemy.orm import Session

from ..errors import InvalidInput, NotFound
from ..ids import new_id
from ..models import File
from ..storage import StoredBlob
from .repository import FileRepository
from .schemas import FileOut


def clean_file_name(name: str | None) -> str:
    """Keep the base name only, without control characters; a file name is never a path."""
    name = unicodedata.normalize("NFC", name or "").replace("\\", "/").split("/")[-1]
    name = "".join(ch for ch in name if ch.isprintable()).strip()
    if name in ("", ".", ".."):
        raise InvalidInput("The file needs a name (e.g. ?name=report.pdf or a multipart filename).", field="name")
    return name[:500]


def guess_media_type(name: str, declared: str | None) -> str:
    if declared and declared not in ("application/octet-stream", "application/x-www-form-urlencoded"):
        return declared.split(";")[0].strip()[:200]
    return mimetypes.guess_type(name)[0] or "application/octet-stream"


def record_upload(session: Session, workspace_id: str, blob: StoredBlob, name: str, media_type: str) -> File:
    repo = FileRepository(session)
    existing = repo.find_same(workspace_id, blob.sha256, name)
    if existing is not None:
        return existing
    return repo.add(
        File(
            id=new_id("file"),
            workspace_id=workspace_id,
            name=name,
            media_type=media_type,
            size=blob.size,
            sha256=blob.sha256,
        )
    )


def get_file(session: Session, workspace_id: str, file_id: str) -> File:
    file = FileRepository(session).get(workspace_id, file_id)
    if file is None:
        raise NotFound(f"No file {file_id} in this workspace.")
    return file


def to_out(file: File) -> FileOut:
    return FileOut(
        id=file.id,
        name=file.name,
        media_type=file.media_type,
        size=file.size,
        sha256=file.sha256,
        created_at=file.created_at,
        download_path=f"/api/v1/files/{file.id}/content",
        external_key=file.external_key,
    )
