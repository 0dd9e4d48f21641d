"""Scoring: the job queue, scorer configurations, and rollout advantages.

Revision ID: 0003_scoring
Revises: 0002_ui
Create Date: 2026-11-26 01:20:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import rollout_server.db.types

revision: str = "0003_scoring"
down_revision: str | None = "0002_ui"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "jobs",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("run_id", sa.String(length=40), nullable=True),
        sa.Column("rollout_id", sa.String(length=40), nullable=True),
        sa.Column("payload", rollout_server.db.types.JSONType, nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("max_attempts", sa.Integer(), nullable=False),
        sa.Column("run_after", rollout_server.db.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("locked_by", sa.String(length=100), nullable=True),
        sa.Column("locked_until", rollout_server.db.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("result", rollout_server.db.types.JSONType, nullable=True),
        sa.Column("created_at", rollout_server.db.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("finished_at", rollout_server.db.types.UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["rollout_id"], ["rollouts.id"], name=op.f("fk_jobs_rollout_id_rollouts"), ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name=op.f("fk_jobs_run_id_runs"), ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["workspace_id"], ["workspaces.id"], name=op.f("fk_jobs_workspace_id_workspaces"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_jobs")),
    )
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.create_index("ix_jobs_status_run_after", ["status", "run_after"], unique=False)
        batch_op.create_index("ix_jobs_run_status", ["run_id", "status"], unique=False)
        batch_op.create_index(batch_op.f("ix_jobs_workspace_id"), ["workspace_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_jobs_rollout_id"), ["rollout_id"], unique=False)

    op.create_table(
        "scorers",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("dataset_id", sa.String(length=40), nullable=True),
        sa.Column("run_id", sa.String(length=40), nullable=True),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("type", sa.String(length=100), nullable=False),
        sa.Column("config", rollout_server.db.types.JSONType, nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("created_at", rollout_server.db.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", rollout_server.db.types.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["dataset_id"], ["datasets.id"], name=op.f("fk_scorers_dataset_id_datasets"), ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name=op.f("fk_scorers_run_id_runs"), ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["workspace_id"], ["workspaces.id"], name=op.f("fk_scorers_workspace_id_workspaces"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_scorers")),
    )
    with op.batch_alter_table("scorers", schema=None) as batch_op:
        batch_op.create_index("ix_scorers_dataset", ["dataset_id"], unique=False)
        batch_op.create_index("ix_scorers_run", ["run_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_scorers_workspace_id"), ["workspace_id"], unique=False)

    with op.batch_alter_table("rollouts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("advantage", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("rollouts", schema=None) as batch_op:
        batch_op.drop_column("advantage")
    with op.batch_alter_table("scorers", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_scorers_workspace_id"))
        batch_op.drop_index("ix_scorers_run")
        batch_op.drop_index("ix_scorers_dataset")
    op.drop_table("scorers")
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_jobs_rollout_id"))
        batch_op.drop_index(batch_op.f("ix_jobs_workspace_id"))
        batch_op.drop_index("ix_jobs_run_status")
        batch_op.drop_index("ix_jobs_status_run_after")
    op.drop_table("jobs")
