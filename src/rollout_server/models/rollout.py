"""Rollouts, their trace events, and scores."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    func,
    literal_column,
)
from sqlalchemy.orm import Mapped, mapped_column

from ..db.base import Base
from ..db.types import JSONType, UTCDateTime, utcnow

ROLLOUT_STATUSES = ("running", "succeeded", "failed", "errored", "cancelled")
FINAL_STATUSES = ("succeeded", "failed", "errored", "cancelled")
EVENT_KINDS = ("message", "reasoning", "llm_call", "tool_call", "tool_result", "error", "log", "span")


class Rollout(Base):
    __tablename__ = "rollouts"
    __table_args__ = (
        UniqueConstraint("run_id", "attempt"),
        UniqueConstraint("run_id", "client_key"),
        Index("ix_rollouts_workspace_started", "workspace_id", "started_at"),
        Index("ix_rollouts_run_task", "run_id", "task_id"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    attempt: Mapped[int] = mapped_column(Integer)
    task_id: Mapped[str | None] = mapped_column(ForeignKey("tasks.id", ondelete="SET NULL"), index=True)
    repeat_index: Mapped[int] = mapped_column(Integer, default=0)
    input: Mapped[Any | None] = mapped_column(JSONType)
    status: Mapped[str] = mapped_column(String(20), default="running")
    output: Mapped[Any | None] = mapped_column(JSONType)
    error: Mapped[str | None] = mapped_column(Text)
    reward: Mapped[float | None] = mapped_column(Float)
    # GRPO-style advantage within the rollout's group, written by POST /runs/{run}/advantages.
    advantage: Mapped[float | None] = mapped_column(Float)
    discarded: Mapped[bool] = mapped_column(Boolean, default=False)
    discard_reason: Mapped[str | None] = mapped_column(String(200))
    step: Mapped[int | None] = mapped_column(Integer)
    group_key: Mapped[str | None] = mapped_column(String(500))
    metadata_: Mapped[dict[str, Any] | None] = mapped_column("metadata", JSONType)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    latency_ms: Mapped[float | None] = mapped_column(Float)
    input_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    output_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    cost: Mapped[float] = mapped_column(Float, default=0.0)
    event_count: Mapped[int] = mapped_column(Integer, default=0)
    last_seq: Mapped[int] = mapped_column(BigInteger, default=0)
    # Client-chosen idempotency key: a retried start with the same key returns the same rollout.
    client_key: Mapped[str | None] = mapped_column(String(80))
    # SHA-256 of the request that first used the key (common/idempotency.py).
    request_digest: Mapped[str | None] = mapped_column(String(64))


# Group exports (GRPO, DPO) walk a run's rollouts group by group: (run, step, group, attempt), the group being
# the explicit group key, else the task, else the rollout itself. The keyset walk needs this order from an
# index; without one every page re-sorted the whole run (6,100 rollouts/s over 100,000, and quadratic).
Index(
    "ix_rollouts_run_group", Rollout.run_id, func.coalesce(Rollout.step, literal_column("-1")),
    func.coalesce(Rollout.group_key, Rollout.task_id, Rollout.id), Rollout.attempt,
)


class TraceEvent(Base):
    __tablename__ = "trace_events"
    __table_args__ = (
        UniqueConstraint("rollout_id", "event_id"),
        Index("ix_trace_events_rollout_seq", "rollout_id", "seq"),
    )

    pk: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True)
    rollout_id: Mapped[str] = mapped_column(ForeignKey("rollouts.id", ondelete="CASCADE"))
    # Client-generated, so a retried batch never stores an event twice.
    event_id: Mapped[str] = mapped_column(String(80))
    seq: Mapped[int] = mapped_column(BigInteger)
    kind: Mapped[str] = mapped_column(String(20))
    parent_id: Mapped[str | None] = mapped_column(String(80))
    name: Mapped[str | None] = mapped_column(String(500))
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    duration_ms: Mapped[float | None] = mapped_column(Float)
    # Kind-specific body (role/content, arguments, usage...). Large ones live in the blob store.
    payload: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    payload_blob: Mapped[str | None] = mapped_column(String(64))
    metadata_: Mapped[dict[str, Any] | None] = mapped_column("metadata", JSONType)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Score(Base):
    __tablename__ = "scores"
    __table_args__ = (
        Index("ix_scores_rollout_name", "rollout_id", "name"),
        UniqueConstraint("rollout_id", "client_id"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    rollout_id: Mapped[str] = mapped_column(ForeignKey("rollouts.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(200))
    # "number", "boolean", "category" or "text"; `value` keeps the original, `numeric_value` aggregates.
    data_type: Mapped[str] = mapped_column(String(20))
    value: Mapped[Any] = mapped_column(JSONType)
    numeric_value: Mapped[float | None] = mapped_column(Float)
    source: Mapped[str] = mapped_column(String(200), default="sdk")
    comment: Mapped[str | None] = mapped_column(Text)
    author: Mapped[str | None] = mapped_column(String(320))
    # Client-generated id, so a re-sent score is stored once.
    client_id: Mapped[str | None] = mapped_column(String(80))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
