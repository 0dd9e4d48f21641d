"""Datasets as artifacts: files that reference an object in the workspace's bucket; re-runs below a reward.

Revision ID: 0004_datasets
Revises: 0003_scoring
Create Date: 2026-11-26 02:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004_datasets"
down_revision: str | None = "0003_scoring"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("files") as batch:
        batch.add_column(sa.Column("external_key", sa.String(length=1024), nullable=True))
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("rerun_reward_below", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("rerun_reward_below")
    with op.batch_alter_table("files") as batch:
        batch.drop_column("external_key")
