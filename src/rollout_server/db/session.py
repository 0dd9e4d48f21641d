"""Session factories. Writes and reads get separate engines so SQLite readers never take the write lock."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from .engine import make_engine


@dataclass
class Database:
    url: str
    write_engine: Engine
    read_engine: Engine
    write_sessions: sessionmaker[Session]
    read_sessions: sessionmaker[Session]

    @property
    def dialect(self) -> str:
        return self.write_engine.dialect.name

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """The one place a unit of work commits: on clean exit, or rolls back on error."""
        with self.write_sessions() as session, session.begin():
            yield session

    @contextmanager
    def reading(self) -> Iterator[Session]:
        with self.read_sessions() as session:
            yield session

    def dispose(self) -> None:
        self.write_engine.dispose()
        if self.read_engine is not self.write_engine:
            self.read_engine.dispose()


def open_database(url: str, *, pool_size: int = 10) -> Database:
    write_engine = make_engine(url, pool_size=pool_size, write=True)
    if write_engine.dialect.name == "sqlite":
        read_engine = make_engine(url, pool_size=pool_size, write=False)
    else:
        read_engine = write_engine
    return Database(
        url=url,
        write_engine=write_engine,
        read_engine=read_engine,
        write_sessions=sessionmaker(write_engine, expire_on_commit=False),
        read_sessions=sessionmaker(read_engine, expire_on_commit=False),
    )
