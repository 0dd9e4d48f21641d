"""Wire schemas for workspaces and API keys."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from ..common.schemas import OutSchema, Schema


class WorkspaceOut(OutSchema):
    id: str
    name: str
    created_at: datetime


class ApiKeyCreate(Schema):
    name: str = Field("api key", min_length=1, max_length=200, description="A label to tell keys apart.")


class ApiKeyOut(OutSchema):
    id: str
    name: str
    prefix: str = Field(description="The first characters of the secret; not enough to use it.")
    created_at: datetime
    last_used_at: datetime | None = None
    revoked_at: datetime | None = None


class ApiKeyCreated(ApiKeyOut):
    secret: str = Field(description="The full key. It is shown only in this response; store it now.")
