"""Run Alembic migrations from code (server start, CLI, tests) and check models against the schema."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from sqlalchemy import Column, Connection, Engine, inspect

from ..models import Base
from .engine import make_engine

ROOT = Path(__file__).resolve().parents[3]


def alembic_config(url: str) -> Config:
    config = Config(str(ROOT / "alembic.ini"))
    config.set_main_option("script_location", str(ROOT / "migrations"))
    config.set_main_option("rollout.url", url.replace("%", "%%"))
    return config


def upgrade(url: str, revision: str = "head") -> None:
    command.upgrade(alembic_config(url), revision)


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def schema_drift(engine: Engine) -> list[Any]:
    """Differences between the models and the migrated database (empty when they match). Alembic cannot
    compare expression indexes, so for those it is checked that an index of that name exists."""
    with engine.connect() as connection, warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*expression-based index")
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        drift: list[Any] = list(compare_metadata(context, Base.metadata))
        inspector = inspect(connection)
        for table in Base.metadata.sorted_tables:
            wanted = {str(i.name) for i in table.indexes if any(not isinstance(e, Column) for e in i.expressions)}
            if wanted:
                present = {i["name"] for i in inspector.get_indexes(table.name)}
                present |= _sqlite_index_names(connection, table.name)
                drift += [("missing_expression_index", table.name, name) for name in sorted(wanted - present)]
        return drift


def _sqlite_index_names(connection: Connection, table: str) -> set[str]:
    # SQLite's reflection leaves expression indexes out; its catalogue has them.
    if connection.dialect.name != "sqlite":
        return set()
    rows = connection.exec_driver_sql("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ?", (table,))
    return {name for (name,) in rows}


def upgrade_engine_url(url: str) -> None:
    """Migrate, creating the SQLite folder first if needed."""
    engine = make_engine(url)
    engine.dispose()
    upgrade(url)
