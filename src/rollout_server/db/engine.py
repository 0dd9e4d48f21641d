"""Engine factory: the one place where SQLite and PostgreSQL are told apart."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.dialects.sqlite.base import SQLiteCompiler
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool


def _json_dumps(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


def _json_loads(value: Any) -> Any:
    # SQLite gives JSON columns NUMERIC affinity, so a JSON number comes back already converted.
    if isinstance(value, str | bytes | bytearray | memoryview):
        return orjson.loads(value)
    return value


def normalize_url(url: str) -> str:
    """Accept plain `postgresql://` URLs and use psycopg 3 for them."""
    if url.startswith("postgres://"):
        url = "postgresql://" + url[len("postgres://") :]
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url[len("postgresql://") :]
    return url


def make_engine(url: str, *, pool_size: int = 10, write: bool = True) -> Engine:
    """Build an engine. On SQLite, `write=True` opens transactions with BEGIN IMMEDIATE so concurrent
    writers queue on the lock instead of failing when a read transaction tries to upgrade."""
    url = normalize_url(url)
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return _sqlite_engine(url, write=write)
    # Enough connections for every request thread (Starlette's pool has 40), so a burst queues in the
    # database rather than timing out on the pool.
    return create_engine(
        url,
        pool_size=pool_size,
        max_overflow=max(40 - pool_size, pool_size),
        pool_pre_ping=True,
        json_serializer=_json_dumps,
        json_deserializer=_json_loads,
    )


def _sqlite_from_hint(self: SQLiteCompiler, table: Any, text: str | None) -> str | None:
    return text


# SQLAlchemy renders table hints (`Select.with_hint`) only for dialects that define where they go; on SQLite it is
# right after the table name, as in `FROM rollouts INDEXED BY ix_…` (used where SQLite's planner, lacking
# statistics, would pick an index and a sort over the index that gives the order: exports/repository.py).
SQLiteCompiler.get_from_hint_text = _sqlite_from_hint  # type: ignore[method-assign,assignment]


def _sqlite_engine(url: str, *, write: bool) -> Engine:
    database = make_url(url).database
    if database and database != ":memory:":
        Path(database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(
        url,
        connect_args={"check_same_thread": False, "timeout": 60},
        **({"poolclass": NullPool} if database in (None, "", ":memory:") else {"pool_size": 10, "max_overflow": 40}),
        json_serializer=_json_dumps,
        json_deserializer=_json_loads,
    )
    begin = "BEGIN IMMEDIATE" if write else "BEGIN"

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy, not the sqlite3 module, decide when transactions start.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=60000")
        cursor.close()

    if not write:
        @event.listens_for(engine, "begin")
        def _on_begin_read(connection: Any) -> None:
            connection.exec_driver_sql(begin)

        return engine

    # One writer at a time: SQLite's busy handler retries with sleeps and serves waiting writers unfairly
    # (p99 in seconds under load). Queueing on a lock in the process hands the write lock over in turn.
    writer = threading.Lock()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        writer.acquire()
        try:
            connection.exec_driver_sql(begin)
        except BaseException:
            writer.release()
            raise
        connection.info["rollout_writer"] = True

    def _release(connection: Any) -> None:
        if connection.info.pop("rollout_writer", False):
            writer.release()

    event.listen(engine, "commit", _release)
    event.listen(engine, "rollback", _release)
    return engine


def is_sqlite(engine: Engine) -> bool:
    return engine.dialect.name == "sqlite"
