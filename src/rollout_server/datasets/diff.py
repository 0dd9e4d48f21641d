"""The difference between two versions of a dataset: tasks added, removed and changed (with the fields)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from ..common.pagination import decode_cursor, encode_cursor
from ..errors import InvalidInput
from ..models import Dataset, Task
from .repository import DatasetRepository
from .schemas import DiffItem, DiffPage
from .service import TASK_FIELDS, resolve_version, tasks_out


def _value(task: Task, name: str) -> Any:
    return getattr(task, "metadata_" if name == "metadata" else name)


def version_diff(session: Session, dataset: Dataset, low: int | None, high: int | None, *, cursor: str | None,
                 limit: int) -> DiffPage:
    """Keys whose revision differs between `low` (0: the empty dataset before version 1) and `high`."""
    to = resolve_version(session, dataset, high)
    start = to - 1 if low is None else (0 if low == 0 else resolve_version(session, dataset, low))
    if start > to:
        raise InvalidInput(f"'from' ({start}) is after 'to' ({to}); swap them.", field="from")
    after = decode_cursor(cursor, (str,))
    repo = DatasetRepository(session)
    # A key has at most one revision in each version, so 2 * limit rows hold `limit` whole keys.
    rows = repo.changed_between(dataset.id, start, to, after_key=after[0] if after else None,
                                limit=2 * limit + 1)
    more = len(rows) > 2 * limit
    by_key: dict[str, list[Task]] = {}
    for row in rows:
        by_key.setdefault(row.key, []).append(row)
    keys = list(by_key)
    if more:
        keys = keys[:-1]  # its second revision may lie beyond the rows read
    more = more or len(keys) > limit
    keys = keys[:limit]
    outs = {t.id: t for t in tasks_out(session, [t for k in keys for t in by_key[k]])}
    files = repo.file_id_lists([t.id for k in keys for t in by_key[k]])
    items: list[DiffItem] = []
    for key in keys:
        before = next((t for t in by_key[key] if start > 0 and t.first_version <= start
                       and (t.last_version is None or t.last_version >= start)), None)
        after_task = next((t for t in by_key[key] if t is not before), None)
        if before is None and after_task is not None:
            items.append(DiffItem(key=key, change="added", after=outs[after_task.id]))
        elif after_task is None and before is not None:
            items.append(DiffItem(key=key, change="removed", before=outs[before.id]))
        elif before is not None and after_task is not None:
            fields = [n for n in TASK_FIELDS if _value(before, n) != _value(after_task, n)]
            if files[before.id] != files[after_task.id]:
                fields.append("files")
            items.append(DiffItem(key=key, change="changed", fields=fields, before=outs[before.id],
                                  after=outs[after_task.id]))
    return DiffPage(from_version=start, to_version=to, items=items,
                    next_cursor=encode_cursor(keys[-1]) if more and keys else None)
