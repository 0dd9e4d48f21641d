"""UI support: per-workspace storage settings and anything else the web UI needs in the database.

Revision ID: 0002_ui
Revises: 0001_initial
Create Date: 2026-11-26 01:20:00
"""

from collections.abc import Sequence

import sqlalchemy as sa  # noqa: F401
from alembic import op  # noqa: F401

import rollout_server.db.types  # noqa: F401

revision: str = "0002_ui"
down_revision: str | None = "0001_initial"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
