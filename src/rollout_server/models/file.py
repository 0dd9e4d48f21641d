"""Files: named references to content-addressed bytes in the workspace's blob store."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from ..db.base import Base
from ..db.types import UTCDateTime, utcnow


class File(Base):
    __tablename__ = "files"
    __table_args__ = (Index("ix_files_workspace_sha256", "workspace_id", "sha256"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(500))
    media_type: Mapped[str] = mapped_column(String(200))
    size: Mapped[int] = mapped_column(BigInteger)
    sha256: Mapped[str] = mapped_column(String(64))
    # Set for a file that references an object of the workspace's connected bucket instead of a copy:
    # its bytes are read from that bucket (key as given, outside the bucket's prefix).
    external_key: Mapped[str | None] = mapped_column(String(1024))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
