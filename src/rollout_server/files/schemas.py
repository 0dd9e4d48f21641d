"""Wire schemas for files."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from ..common.schemas import OutSchema


class FileOut(OutSchema):
    id: str
    name: str
    media_type: str
    size: int
    sha256: str
    created_at: datetime
    download_path: str = Field(description="API path that streams the bytes (same auth).")


class FileUrl(OutSchema):
    url: str
    expires_in: int | None = Field(None, description="Seconds until a presigned URL expires; null for API paths.")
