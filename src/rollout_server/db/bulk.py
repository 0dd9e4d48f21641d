"""Bulk inserts for the ingestion hot path, where SQLAlchemy's per-row statement processing costs
more than the database's work: one INSERT … SELECT FROM jsonb_to_recordset on PostgreSQL, a
driver-level executemany on SQLite. Values are
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


def _identity(value: Any) -> Any:
    return value


def _sqlite_converter(table: Table, name: str) -> Callable[[Any], Any]:
    column_type = table.c[name].type
    if isinstance(column_type, UTCDateTime):
        return _sqlite_time
    if isinstance(column_type, JSON):
        return _json_text
    return _identity


def _record_type(table: Table, name: str, session: Session) -> str:
    column_type = table.c[name].type
    if isinstance(column_type, UTCDateTime):
        return "timestamptz"
    if isinstance(column_type, JSON):
        return "jsonb"
    return str(column_type.compile(dialect=session.get_bind().dialect))


def insert_returning_new(
    session: Session, table: Table, columns: Sequence[str], rows: Sequence[dict[str, Any]], unique: Sequence[str]
) -> set[tuple[Any, ...]]:
    """PostgreSQL: INSERT … ON CONFLICT (unique) DO NOTHING RETURNING unique, for rows sent as one JSON
    document that jsonb_to_recordset unpacks: one short statement and one parameter (orjson encodes in C,
    PostgreSQL parses in C), and no separate lookup of stored ids. Returns the unique keys inserted."""
    if not rows:
        return set()
    if session.get_bind().dialect.name == "sqlite":
        return _sqlite_insert_returning_new(session, table, columns, rows, unique)
    record = ", ".join(f"{name} {_record_type(table, name, session)}" for name in columns)
    names = ", ".join(columns)
    sql = (f"INSERT INTO {table.name} ({names}) SELECT {names} FROM jsonb_to_recordset(%s::jsonb) AS t({record}) "
           f"ON CONFLICT ({', '.join(unique)}) DO NOTHING RETURNING {', '.join(unique)}")
    # Keys beyond `columns` are ignored by jsonb_to_recordset, so rows go in as they are. JSON values may be
    # orjson.Fragment (already encoded).
    document = orjson.dumps(rows, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_NAIVE_UTC)
    result = session.connection().exec_driver_sql(sql, (document.decode(),))
    return set(map(tuple, result.fetchall()))


def _sqlite_insert_returning_new(
    session: Session, table: Table, columns: Sequence[str], rows: Sequence[dict[str, Any]], unique: Sequence[str]
) -> set[tuple[Any, ...]]:
    # One executemany; the write lock (BEGIN IMMEDIATE) is held, so when fewer rows went in than were
    # sent, the ones inserted are exactly those above the highest rowid seen before.
    connection = session.connection()
    driver = connection.connection.driver_connection
    assert driver is not None
    converters = [_sqlite_converter(table, name) for name in columns]
    params = [tuple(convert(row[name]) for convert, name in zip(converters, columns, strict=True)) for row in rows]
    cursor = driver.cursor()
    try:
        top = cursor.execute(f"SELECT max(rowid) FROM {table.name}").fetchone()[0] or 0
        before = driver.total_changes
        cursor.executemany(
            f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)}) "
            f"ON CONFLICT ({', '.join(unique)}) DO NOTHING", params)
        if driver.total_changes - before == len(rows):
            return {tuple(row[name] for name in unique) for row in rows}
        return set(cursor.execute(f"SELECT {', '.join(unique)} FROM {table.name} WHERE rowid > ?", (top,)))
    finally:
        cursor.close()
