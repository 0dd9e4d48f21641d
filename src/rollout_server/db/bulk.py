"""Bulk inserts for the ingestion hot path, where SQLAlchemy's per-row statement processing costs
more than the database's work: COPY on PostgreSQL, a driver-level executemany on SQLite. Values are
converted here exactly as the column types would (UTC timestamps, JSON through orjson), so rows read
back through the ORM unchanged."""

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


def _converter(table: Table, name: str, dialect: str) -> Callable[[Any], Any]:
    column_type = table.c[name].type
    if isinstance(column_type, UTCDateTime):
        return _sqlite_time if dialect == "sqlite" else _pg_time
    if isinstance(column_type, JSON):
        return _json_text
    return _identity


def insert_new_rows(
    session: Session, table: Table, columns: Sequence[str], rows: Sequence[dict[str, Any]], unique: Sequence[str]
) -> None:
    """Insert rows the caller has checked are new (under row locks that keep them new until commit),
    inside the session's transaction: PostgreSQL COPY, or one SQLite executemany. A duplicate that
    slipped through anyway fails the transaction on PostgreSQL (a conflict the client retries) and is
    skipped on SQLite (`unique` is the conflict target)."""
    if not rows:
        return
    connection = session.connection()
    dialect = connection.dialect.name
    converters = [_converter(table, name, dialect) for name in columns]
    params = [tuple(convert(row[name]) for convert, name in zip(converters, columns, strict=True)) for row in rows]
    if dialect == "postgresql":
        driver = connection.connection.driver_connection
        assert driver is not None
        with driver.cursor() as cursor, cursor.copy(f"COPY {table.name} ({', '.join(columns)}) FROM STDIN") as copy:
            for values in params:
                copy.write_row(values)
        return
    marks = ", ".join("?" for _ in columns)
    sql = (f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES ({marks}) "
           f"ON CONFLICT ({', '.join(unique)}) DO NOTHING")
    connection.exec_driver_sql(sql, params)  # type: ignore[arg-type]
