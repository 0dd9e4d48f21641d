"""Scoring: the job queue, scorer configurations, advantages and scorer errors.

Revision ID: 0003_scoring
Revises: 0002_ui
Create Date: 2026-11-26 01:20:00
"""

from collections.abc import Sequence

import sqlalchemy as sa  # noqa: F401
from alembic import op  # noqa: F401

import rollout_server.db.types  # noqa: F401

revision: str = "0003_scoring"
down_revision: str | None = "0002_ui"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
