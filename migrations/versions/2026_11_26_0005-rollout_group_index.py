"""An index in group order, for exports that walk a run group by group (GRPO, DPO).

Revision ID: 0005_rollout_group_index
Revises: 0004_datasets
Create Date: 2026-11-26 05:00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0005_rollout_group_index"
down_revision: str | None = "0004_datasets"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # An expression index (the same text on SQLite and PostgreSQL); see models/rollout.py.
    op.execute("CREATE INDEX ix_rollouts_run_group ON rollouts "
               "(run_id, coalesce(step, -1), coalesce(group_key, task_id, id), attempt)")


def downgrade() -> None:
    op.drop_index("ix_rollouts_run_group", table_name="rollouts")
