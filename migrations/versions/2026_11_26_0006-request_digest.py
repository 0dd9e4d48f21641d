"""A digest of the request that first used a client_key, so reusing the key for another request is refused.

Revision ID: 0006_request_digest
Revises: 0005_rollout_group_index
Create Date: 2026-11-26 05:10:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006_request_digest"
down_revision: str | None = "0005_rollout_group_index"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    for table in ("runs", "rollouts"):
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("request_digest", sa.String(length=64), nullable=True))


def downgrade() -> None:
    for table in ("rollouts", "runs"):
        with op.batch_alter_table(table) as batch:
            batch.drop_column("request_digest")
