"""Runs: one execution of a dataset version, or of ad-hoc tasks for production traffic."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Float, ForeignKey, Index, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from ..db.base import Base
from ..db.types import JSONType, UTCDateTime, utcnow

RUN_STATUSES = ("running", "finished", "failed", "cancelled")


class Run(Base):
    __tablename__ = "runs"
    __table_args__ = (
        UniqueConstraint("workspace_id", "number"),
        UniqueConstraint("workspace_id", "client_key"),
        Index("ix_runs_workspace_created", "workspace_id", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    number: Mapped[int] = mapped_column(Integer)
    dataset_id: Mapped[str | None] = mapped_column(ForeignKey("datasets.id", ondelete="SET NULL"), index=True)
    dataset_version: Mapped[int | None] = mapped_column(Integer)
    workflow_name: Mapped[str | None] = mapped_column(String(200))
    group_id: Mapped[str | None] = mapped_column(String(200))
    agent_name: Mapped[str | None] = mapped_column(String(200))
    agent_version: Mapped[str | None] = mapped_column(String(100))
    model: Mapped[str | None] = mapped_column(String(200))
    params: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    tags: Mapped[list[str] | None] = mapped_column(JSONType)
    num_repeats: Mapped[int] = mapped_column(Integer, default=1)
    reward_score: Mapped[str] = mapped_column(String(200), default="reward")
    # "Only the tasks that failed in run N": the source run and which statuses count as failed.
    rerun_of_id: Mapped[str | None] = mapped_column(ForeignKey("runs.id", ondelete="SET NULL"))
    rerun_statuses: Mapped[list[str] | None] = mapped_column(JSONType)
    # A re-run also takes the source run's tasks whose reward was below this.
    rerun_reward_below: Mapped[float | None] = mapped_column(Float)
    status: Mapped[str] = mapped_column(String(20), default="running")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    next_attempt: Mapped[int] = mapped_column(Integer, default=1)
    # Client-chosen idempotency key: starting a run again with the same key returns the same run.
    client_key: Mapped[str | None] = mapped_column(String(80))
    # SHA-256 of the request that first used the key (common/idempotency.py).
    request_digest: Mapped[str | None] = mapped_column(String(64))
