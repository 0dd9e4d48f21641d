"""Driver-level executemany for the ingestion hot path, where SQLAlchemy's per-row statement
processing costs more than the database's work. Values are converted here exactly as the column
types would (UTC timestamps, JSON through orjson), so rows read back through the ORM unchanged."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import orjson
from sqlalchemy import JSON, Table
from sqlalchemy.orm import Session

from .types import UTCDateTime


def _json_text(value: Any) -> str | None:
    return None if value is None else orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


def _sqlite_time(value: datetime | None) -> str | None:
    if value is None:
        return None
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value.isoformat(" ", "microseconds")


def _pg_time(value: datetime | None) -> datetime | None:
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


def _identity(value: Any) -> Any:
    return value


def _column_plan(table: Table, name: str, dialect: str) -> tuple[Callable[[Any], Any], str]:
    column_type = table.c[name].type
    mark = "?" if dialect == "sqlite" else "%s"
    if isinstance(column_type, UTCDateTime):
        return (_sqlite_time if dialect == "sqlite" else _pg_time), mark
    if isinstance(column_type, JSON):
        return _json_text, mark if dialect == "sqlite" else "%s::jsonb"
    return _identity, mark


def insert_ignoring_duplicates(
    session: Session, table: Table, columns: Sequence[str], rows: Sequence[dict[str, Any]], conflict: Sequence[str]
) -> None:
    """INSERT … ON CONFLICT (conflict) DO NOTHING for many rows in one driver-level executemany,
    inside the session's transaction."""
    if not rows:
        return
    connection = session.connection()
    dialect = connection.dialect.name
    plans = [_column_plan(table, name, dialect) for name in columns]
    sql = (
        f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES ({', '.join(mark for _, mark in plans)}) "
        f"ON CONFLICT ({', '.join(conflict)}) DO NOTHING"
    )
    converters = [convert for convert, _ in plans]
    params = [tuple(convert(row[name]) for convert, name in zip(converters, columns, strict=True)) for row in rows]
    connection.exec_driver_sql(sql, params)  # type: ignore[arg-type]
