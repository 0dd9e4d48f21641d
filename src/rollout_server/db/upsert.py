"""INSERT … ON CONFLICT DO NOTHING, the one statement whose construct differs by dialect."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session


def insert_ignoring_conflicts(session: Session, table: Table, index_elements: list[str]) -> Any:
    name = session.get_bind().dialect.name
    module: Any = postgresql if name == "postgresql" else sqlite
    return module.insert(table).on_conflict_do_nothing(index_elements=index_elements)
