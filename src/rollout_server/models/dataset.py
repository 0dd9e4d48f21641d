"""Datasets, their immutable versions, and task revisions.

A task row is one revision of a task key; it is visible in versions
[`first_version`, `last_version`] (open-ended while `last_version` is NULL), so a new version
writes only what changed instead of copying every task.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from ..db.base import Base
from ..db.types import JSONType, UTCDateTime, utcnow


class Dataset(Base):
    __tablename__ = "datasets"
    __table_args__ = (UniqueConstraint("workspace_id", "name"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(200))
    description: Mapped[str | None] = mapped_column(Text)
    latest_version: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class DatasetVersion(Base):
    __tablename__ = "dataset_versions"
    __table_args__ = (UniqueConstraint("dataset_id", "number"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    dataset_id: Mapped[str] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"))
    number: Mapped[int] = mapped_column(Integer)
    message: Mapped[str | None] = mapped_column(Text)
    task_count: Mapped[int] = mapped_column(Integer, default=0)
    added: Mapped[int] = mapped_column(Integer, default=0)
    updated: Mapped[int] = mapped_column(Integer, default=0)
    removed: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Task(Base):
    __tablename__ = "tasks"
    __table_args__ = (
        Index("ix_tasks_dataset_key", "dataset_id", "key", "first_version"),
        Index("ix_tasks_dataset_current", "dataset_id", "last_version"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    dataset_id: Mapped[str] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"))
    key: Mapped[str] = mapped_column(String(500))
    first_version: Mapped[int] = mapped_column(Integer)
    last_version: Mapped[int | None] = mapped_column(Integer)
    instruction: Mapped[str] = mapped_column(Text, default="")
    input: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    expected_output: Mapped[Any | None] = mapped_column(JSONType)
    output_schema: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    metadata_: Mapped[dict[str, Any] | None] = mapped_column("metadata", JSONType)
    split: Mapped[str | None] = mapped_column(String(100))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class TaskFile(Base):
    __tablename__ = "task_files"

    task_id: Mapped[str] = mapped_column(ForeignKey("tasks.id", ondelete="CASCADE"), primary_key=True)
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    file_id: Mapped[str] = mapped_column(ForeignKey("files.id", ondelete="RESTRICT"), index=True)
