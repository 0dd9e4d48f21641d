"""Scorer configurations: which evaluators run on a dataset's or a run's rollouts after they finish."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from ..db.base import Base
from ..db.types import JSONType, UTCDateTime, utcnow


class ScorerConfig(Base):
    """One scorer attached to a dataset (every run of it) or to one run. `name` is the scorer's name: the
    source of the scores it writes and, unless the config says otherwise, the name of its score."""

    __tablename__ = "scorers"
    __table_args__ = (
        Index("ix_scorers_dataset", "dataset_id"),
        Index("ix_scorers_run", "run_id"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"), index=True)
    dataset_id: Mapped[str | None] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"))
    run_id: Mapped[str | None] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(200))
    type: Mapped[str] = mapped_column(String(100))
    config: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
