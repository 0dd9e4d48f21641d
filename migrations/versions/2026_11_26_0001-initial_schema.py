"""Initial schema: workspaces, users, keys, files, datasets, versions, tasks, runs, rollouts, events, scores.

Revision ID: 0001_initial
Revises:
Create Date: 2026-11-26 01:13:46.151456
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import rollout_server.db.types

revision: str = '0001_initial'
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:

    op.create_table('users',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('email', sa.String(length=320), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=True),
    sa.Column('password_hash', sa.String(length=200), nullable=True),
    sa.Column('is_superuser', sa.Boolean(), nullable=False),
    sa.Column('created_at', rollout_server.db.types.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_users')),
    sa.UniqueConstraint('email', name=op.f('uq_users_email'))
    )
    op.create_table('workspaces',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('next_run_number', sa.Integer(), nullable=False),
    sa.Column('created_at', rollout_server.db.types.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_workspaces')),
    sa.UniqueConstraint('name', name=op.f('uq_workspaces_name'))
    )
    op.create_table('api_keys',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('workspace_id', sa.String(length=40), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('prefix', sa.String(length=32), nullable=False),
    sa.Column('key_hash', sa.String(length=64), nullable=False),
    sa.Column('created_by', sa.String(length=40), nullable=True),
    sa.Column('created_at', rollout_server.db.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('last_used_at', rollout_server.db.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('revoked_at', rollout_server.db.types.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['created_by'], ['users.id'], name=op.f('fk_api_keys_created_by_users'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['workspace_id'], ['workspaces.id'], name=op.f('fk_api_keys_workspace_id_workspaces'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_api_keys')),
    sa.UniqueConstraint('key_hash', name=op.f('uq_api_keys_key_hash'))
    )
    with op.batch_alter_table('api_keys', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_api_keys_workspace_id'), ['workspace_id'], unique=False)

    op.create_table('datasets',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('workspace_id', sa.String(length=40), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('description', sa.Text(), nullable=True),
    sa.Column('latest_version', sa.Integer(), nullable=False),
    sa.Column('created_at', rollout_server.db.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', rollout_server.db.types.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['workspace_id'], ['workspaces.id'], name=op.f('fk_datasets_workspace_id_workspaces'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_datasets')),
    sa.UniqueConstraint('workspace_id', 'name', name=op.f('uq_datasets_workspace_id_name'))
    )
    op.create_table('files',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('workspace_id', sa.String(length=40), nullable=False),
    sa.Column('name', sa.String(length=500), nullable=False),
    sa.Column('media_type', sa.String(length=200), nullable=False),
    sa.Column('size', sa.BigInteger(), nullable=False),
    sa.Column('sha256', sa.String(length=64), nullable=False),
    sa.Column('created_at', rollout_server.db.types.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['workspace_id'], ['workspaces.id'], name=op.f('fk_files_workspace_id_workspaces'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_files'))
    )
    with op.batch_alter_table('files', schema=None) as batch_op:
        batch_op.create_index('ix_files_workspace_sha256', ['workspace_id', 'sha256'], unique=False)

    op.create_table('memberships',
    sa.Column('workspace_id', sa.String(length=40), nullable=False),
    sa.Column('user_id', sa.String(length=40), nullable=False),
    sa.Column('role', sa.String(length=20), nullable=False),
    sa.Column('created_at', rollout_server.db.types.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_memberships_user_id_users'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['workspace_id'], ['workspaces.id'], name=op.f('fk_memberships_workspace_id_workspaces'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('workspace_id', 'user_id', name=op.f('pk_memberships'))
    )
    with op.batch_alter_table('memberships', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_memberships_user_id'), ['user_id'], unique=False)

    op.create_table('dataset_versions',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('dataset_id', sa.String(length=40), nullable=False),
    sa.Column('number', sa.Integer(), nullable=False),
    sa.Column('message', sa.Text(), nullable=True),
    sa.Column('task_count', sa.Integer(), nullable=False),
    sa.Column('added', sa.Integer(), nullable=False),
    sa.Column('updated', sa.Integer(), nullable=False),
    sa.Column('removed', sa.Integer(), nullable=False),
    sa.Column('created_at', rollout_server.db.types.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['dataset_id'], ['datasets.id'], name=op.f('fk_dataset_versions_dataset_id_datasets'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_dataset_versions')),
    sa.UniqueConstraint('dataset_id', 'number', name=op.f('uq_dataset_versions_dataset_id_number'))
    )
    op.create_table('runs',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('workspace_id', sa.String(length=40), nullable=False),
    sa.Column('number', sa.Integer(), nullable=False),
    sa.Column('dataset_id', sa.String(length=40), nullable=True),
    sa.Column('dataset_version', sa.Integer(), nullable=True),
    sa.Column('workflow_name', sa.String(length=200), nullable=True),
    sa.Column('group_id', sa.String(length=200), nullable=True),
    sa.Column('agent_name', sa.String(length=200), nullable=True),
    sa.Column('agent_version', sa.String(length=100), nullable=True),
    sa.Column('model', sa.String(length=200), nullable=True),
    sa.Column('params', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('tags', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('num_repeats', sa.Integer(), nullable=False),
    sa.Column('reward_score', sa.String(length=200), nullable=False),
    sa.Column('rerun_of_id', sa.String(length=40), nullable=True),
    sa.Column('rerun_statuses', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('status', sa.String(length=20), nullable=False),
    sa.Column('created_at', rollout_server.db.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('finished_at', rollout_server.db.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('next_attempt', sa.Integer(), nullable=False),
    sa.Column('client_key', sa.String(length=80), nullable=True),
    sa.ForeignKeyConstraint(['dataset_id'], ['datasets.id'], name=op.f('fk_runs_dataset_id_datasets'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['rerun_of_id'], ['runs.id'], name=op.f('fk_runs_rerun_of_id_runs'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['workspace_id'], ['workspaces.id'], name=op.f('fk_runs_workspace_id_workspaces'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_runs')),
    sa.UniqueConstraint('workspace_id', 'client_key', name=op.f('uq_runs_workspace_id_client_key')),
    sa.UniqueConstraint('workspace_id', 'number', name=op.f('uq_runs_workspace_id_number'))
    )
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_runs_dataset_id'), ['dataset_id'], unique=False)
        batch_op.create_index('ix_runs_workspace_created', ['workspace_id', 'created_at'], unique=False)

    op.create_table('tasks',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('dataset_id', sa.String(length=40), nullable=False),
    sa.Column('key', sa.String(length=500), nullable=False),
    sa.Column('first_version', sa.Integer(), nullable=False),
    sa.Column('last_version', sa.Integer(), nullable=True),
    sa.Column('instruction', sa.Text(), nullable=False),
    sa.Column('input', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('expected_output', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('output_schema', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('metadata', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('split', sa.String(length=100), nullable=True),
    sa.Column('created_at', rollout_server.db.types.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['dataset_id'], ['datasets.id'], name=op.f('fk_tasks_dataset_id_datasets'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_tasks'))
    )
    with op.batch_alter_table('tasks', schema=None) as batch_op:
        batch_op.create_index('ix_tasks_dataset_current', ['dataset_id', 'last_version'], unique=False)
        batch_op.create_index('ix_tasks_dataset_key', ['dataset_id', 'key', 'first_version'], unique=False)

    op.create_table('rollouts',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('workspace_id', sa.String(length=40), nullable=False),
    sa.Column('run_id', sa.String(length=40), nullable=False),
    sa.Column('attempt', sa.Integer(), nullable=False),
    sa.Column('task_id', sa.String(length=40), nullable=True),
    sa.Column('repeat_index', sa.Integer(), nullable=False),
    sa.Column('input', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('status', sa.String(length=20), nullable=False),
    sa.Column('output', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('reward', sa.Float(), nullable=True),
    sa.Column('discarded', sa.Boolean(), nullable=False),
    sa.Column('discard_reason', sa.String(length=200), nullable=True),
    sa.Column('step', sa.Integer(), nullable=True),
    sa.Column('group_key', sa.String(length=500), nullable=True),
    sa.Column('metadata', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('started_at', rollout_server.db.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('ended_at', rollout_server.db.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('latency_ms', sa.Float(), nullable=True),
    sa.Column('input_tokens', sa.BigInteger(), nullable=False),
    sa.Column('output_tokens', sa.BigInteger(), nullable=False),
    sa.Column('cost', sa.Float(), nullable=False),
    sa.Column('event_count', sa.Integer(), nullable=False),
    sa.Column('last_seq', sa.BigInteger(), nullable=False),
    sa.Column('client_key', sa.String(length=80), nullable=True),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], name=op.f('fk_rollouts_run_id_runs'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['task_id'], ['tasks.id'], name=op.f('fk_rollouts_task_id_tasks'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['workspace_id'], ['workspaces.id'], name=op.f('fk_rollouts_workspace_id_workspaces'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_rollouts')),
    sa.UniqueConstraint('run_id', 'attempt', name=op.f('uq_rollouts_run_id_attempt')),
    sa.UniqueConstraint('run_id', 'client_key', name=op.f('uq_rollouts_run_id_client_key'))
    )
    with op.batch_alter_table('rollouts', schema=None) as batch_op:
        batch_op.create_index('ix_rollouts_run_task', ['run_id', 'task_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_rollouts_task_id'), ['task_id'], unique=False)
        batch_op.create_index('ix_rollouts_workspace_started', ['workspace_id', 'started_at'], unique=False)

    op.create_table('task_files',
    sa.Column('task_id', sa.String(length=40), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('file_id', sa.String(length=40), nullable=False),
    sa.ForeignKeyConstraint(['file_id'], ['files.id'], name=op.f('fk_task_files_file_id_files'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['task_id'], ['tasks.id'], name=op.f('fk_task_files_task_id_tasks'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('task_id', 'position', name=op.f('pk_task_files'))
    )
    with op.batch_alter_table('task_files', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_task_files_file_id'), ['file_id'], unique=False)

    op.create_table('scores',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('workspace_id', sa.String(length=40), nullable=False),
    sa.Column('rollout_id', sa.String(length=40), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('data_type', sa.String(length=20), nullable=False),
    sa.Column('value', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('numeric_value', sa.Float(), nullable=True),
    sa.Column('source', sa.String(length=200), nullable=False),
    sa.Column('comment', sa.Text(), nullable=True),
    sa.Column('author', sa.String(length=320), nullable=True),
    sa.Column('client_id', sa.String(length=80), nullable=True),
    sa.Column('created_at', rollout_server.db.types.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['rollout_id'], ['rollouts.id'], name=op.f('fk_scores_rollout_id_rollouts'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['workspace_id'], ['workspaces.id'], name=op.f('fk_scores_workspace_id_workspaces'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_scores')),
    sa.UniqueConstraint('rollout_id', 'client_id', name=op.f('uq_scores_rollout_id_client_id'))
    )
    with op.batch_alter_table('scores', schema=None) as batch_op:
        batch_op.create_index('ix_scores_rollout_name', ['rollout_id', 'name'], unique=False)

    op.create_table('trace_events',
    sa.Column('pk', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('rollout_id', sa.String(length=40), nullable=False),
    sa.Column('event_id', sa.String(length=80), nullable=False),
    sa.Column('seq', sa.BigInteger(), nullable=False),
    sa.Column('kind', sa.String(length=20), nullable=False),
    sa.Column('parent_id', sa.String(length=80), nullable=True),
    sa.Column('name', sa.String(length=500), nullable=True),
    sa.Column('started_at', rollout_server.db.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('ended_at', rollout_server.db.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('duration_ms', sa.Float(), nullable=True),
    sa.Column('payload', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('payload_blob', sa.String(length=64), nullable=True),
    sa.Column('metadata', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('created_at', rollout_server.db.types.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['rollout_id'], ['rollouts.id'], name=op.f('fk_trace_events_rollout_id_rollouts'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('pk', name=op.f('pk_trace_events')),
    sa.UniqueConstraint('rollout_id', 'event_id', name=op.f('uq_trace_events_rollout_id_event_id'))
    )
    with op.batch_alter_table('trace_events', schema=None) as batch_op:
        batch_op.create_index('ix_trace_events_rollout_seq', ['rollout_id', 'seq'], unique=False)




def downgrade() -> None:

    with op.batch_alter_table('trace_events', schema=None) as batch_op:
        batch_op.drop_index('ix_trace_events_rollout_seq')

    op.drop_table('trace_events')
    with op.batch_alter_table('scores', schema=None) as batch_op:
        batch_op.drop_index('ix_scores_rollout_name')

    op.drop_table('scores')
    with op.batch_alter_table('task_files', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_task_files_file_id'))

    op.drop_table('task_files')
    with op.batch_alter_table('rollouts', schema=None) as batch_op:
        batch_op.drop_index('ix_rollouts_workspace_started')
        batch_op.drop_index(batch_op.f('ix_rollouts_task_id'))
        batch_op.drop_index('ix_rollouts_run_task')

    op.drop_table('rollouts')
    with op.batch_alter_table('tasks', schema=None) as batch_op:
        batch_op.drop_index('ix_tasks_dataset_key')
        batch_op.drop_index('ix_tasks_dataset_current')

    op.drop_table('tasks')
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.drop_index('ix_runs_workspace_created')
        batch_op.drop_index(batch_op.f('ix_runs_dataset_id'))

    op.drop_table('runs')
    op.drop_table('dataset_versions')
    with op.batch_alter_table('memberships', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_memberships_user_id'))

    op.drop_table('memberships')
    with op.batch_alter_table('files', schema=None) as batch_op:
        batch_op.drop_index('ix_files_workspace_sha256')

    op.drop_table('files')
    op.drop_table('datasets')
    with op.batch_alter_table('api_keys', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_api_keys_workspace_id'))

    op.drop_table('api_keys')
    op.drop_table('workspaces')
    op.drop_table('users')

