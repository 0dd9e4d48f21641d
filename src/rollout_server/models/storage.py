"""Per-workspace storage settings (an S3-compatible bucket) and indexes the UI's queries need.

Credentials are stored encrypted (Fernet, key derived from the server secret): a database dump alone
does not give access to the bucket.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from ..db.base import Base
from ..db.types import UTCDateTime, utcnow
from .rollout import Rollout


class WorkspaceStorage(Base):
    __tablename__ = "workspace_storage"

    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"), primary_key=True)
    endpoint_url: Mapped[str | None] = mapped_column(String(500))
    region: Mapped[str | None] = mapped_column(String(100))
    bucket: Mapped[str] = mapped_column(String(255))
    prefix: Mapped[str] = mapped_column(String(500), default="")
    # Fernet tokens; the plain values never reach the database or a page.
    access_key_id_encrypted: Mapped[str | None] = mapped_column(Text)
    secret_access_key_encrypted: Mapped[str | None] = mapped_column(Text)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_by: Mapped[str | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    last_check_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_check_error: Mapped[str | None] = mapped_column(Text)


# The Traces page filters a workspace's rollouts by status and pages them newest first; with this index
# PostgreSQL answers "failed rollouts, newest 50" from the index alone even over millions of rows.
# (Declared here, with the UI's migration, so the rollouts model file stays the core platform's.)
Index("ix_rollouts_workspace_status_started", Rollout.workspace_id, Rollout.status, Rollout.started_at)
