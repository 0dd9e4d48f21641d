"""Migrations build the schema the models describe, from an empty database, on SQLite and PostgreSQL."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, inspect, text

from rollout_server.db.engine import make_engine
from rollout_server.db.migrate import alembic_config, current_revision, schema_drift, upgrade
from rollout_server.models import Base
from tests.support.postgres import PostgresServer


def head_revision(url: str) -> str:
    head = ScriptDirectory.from_config(alembic_config(url)).get_current_head()
    assert head is not None, "the migrations folder has no head revision"
    return head


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def empty_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A brand-new database with no tables at all (not a copy of the migrated template)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'empty.db'}"
        return
    server: PostgresServer = request.getfixturevalue("postgres_server")
    name = f"empty_{uuid.uuid4().hex[:12]}"
    url = server.create_database(name)
    yield url
    server.drop_database(name)


@pytest.fixture
def engine_for(empty_db_url: str) -> Iterator[Engine]:
    engine = make_engine(empty_db_url)
    yield engine
    engine.dispose()


def test_empty_database_migrates_to_head_without_drift(empty_db_url: str, engine_for: Engine) -> None:
    assert inspect(engine_for).get_table_names() == [], "the database should start empty"

    upgrade(empty_db_url)

    assert current_revision(engine_for) == head_revision(empty_db_url)
    assert schema_drift(engine_for) == []
    tables = set(inspect(engine_for).get_table_names())
    assert set(Base.metadata.tables) <= tables
    assert tables - set(Base.metadata.tables) == {"alembic_version"}


def test_upgrade_twice_is_a_no_op(empty_db_url: str, engine_for: Engine) -> None:
    upgrade(empty_db_url)
    before = {name: inspect(engine_for).get_columns(name) for name in inspect(engine_for).get_table_names()}

    upgrade(empty_db_url)

    after = {name: inspect(engine_for).get_columns(name) for name in inspect(engine_for).get_table_names()}
    assert [str(c) for c in after.items()] == [str(c) for c in before.items()]
    assert current_revision(engine_for) == head_revision(empty_db_url)
    with engine_for.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM alembic_version")).scalar_one() == 1
    assert schema_drift(engine_for) == []


def test_schema_drift_reports_a_difference(empty_db_url: str, engine_for: Engine) -> None:
    """Guards the guard: a drift check that always answers [] would pass the tests above."""
    upgrade(empty_db_url)
    with engine_for.begin() as connection:
        connection.execute(text("CREATE TABLE stray_table (id INTEGER PRIMARY KEY)"))

    drift = schema_drift(engine_for)

    assert any(diff[0] == "remove_table" and diff[1].name == "stray_table" for diff in drift), drift


def test_schema_drift_reports_a_missing_expression_index(empty_db_url: str, engine_for: Engine) -> None:
    """Alembic cannot compare expression indexes; the drift check still notices one that is missing."""
    upgrade(empty_db_url)
    assert schema_drift(engine_for) == []
    with engine_for.begin() as connection:
        connection.execute(text("DROP INDEX ix_rollouts_run_group"))

    assert ("missing_expression_index", "rollouts", "ix_rollouts_run_group") in schema_drift(engine_for)


def test_cli_db_upgrade_migrates_an_empty_sqlite_database(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    env = {**os.environ, "ROLLOUT_DATABASE_URL": url, "ROLLOUT_DATA_DIR": str(tmp_path / "data")}

    for _ in range(2):  # the second run finds nothing to do and still succeeds
        result = subprocess.run(
            [sys.executable, "-m", "rollout_server.cli", "db", "upgrade"],
            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"

    engine = make_engine(url)
    try:
        assert current_revision(engine) == head_revision(url)
        assert schema_drift(engine) == []
    finally:
        engine.dispose()
