"""UI support: per-workspace storage settings, and an index for the Traces page's status filter.

Revision ID: 0002_ui
Revises: 0001_initial
Create Date: 2026-11-26 01:20:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import rollout_server.db.types

revision: str = "0002_ui"
down_revision: str | None = "0001_initial"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "workspace_storage",
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("endpoint_url", sa.String(length=500), nullable=True),
        sa.Column("region", sa.String(length=100), nullable=True),
        sa.Column("bucket", sa.String(length=255), nullable=False),
        sa.Column("prefix", sa.String(length=500), nullable=False),
        sa.Column("access_key_id_encrypted", sa.Text(), nullable=True),
        sa.Column("secret_access_key_encrypted", sa.Text(), nullable=True),
        sa.Column("updated_at", rollout_server.db.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_by", sa.String(length=40), nullable=True),
        sa.Column("last_check_at", rollout_server.db.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("last_check_error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["updated_by"], ["users.id"], name=op.f("fk_workspace_storage_updated_by_users"),
                                ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["workspace_id"], ["workspaces.id"],
                                name=op.f("fk_workspace_storage_workspace_id_workspaces"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("workspace_id", name=op.f("pk_workspace_storage")),
    )
    with op.batch_alter_table("rollouts", schema=None) as batch_op:
        batch_op.create_index("ix_rollouts_workspace_status_started", ["workspace_id", "status", "started_at"],
                              unique=False)


def downgrade() -> None:
    with op.batch_alter_table("rollouts", schema=None) as batch_op:
        batch_op.drop_index("ix_rollouts_workspace_status_started")
    op.drop_table("workspace_storage")
