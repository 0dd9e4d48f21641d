"""Wire schemas for files."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from ..common.schemas import OutSchema, Schema


class FileOut(OutSchema):
    id: str
    name: str
    media_type: str
    size: int
    sha256: str
    created_at: datetime
    download_path: str = Field(description="API path that streams the bytes (same auth).")
    external_key: str | None = Field(None, description="Object key in the connected bucket for a referenced file.")


class FileUrl(OutSchema):
    url: str
    expires_in: int | None = Field(None, description="Seconds until a presigned URL expires; null for API paths.")


class FileFromBucket(Schema):
    key: str = Field(min_length=1, max_length=1024, description="Object key in the workspace's connected bucket.")
    name: str | None = Field(None, max_length=500, description="File name; default: the key's last part.")
    mode: Literal["reference", "import"] = Field(
        "reference", description="reference: point at the object without copying; import: copy the bytes in.")
