"""Business rules for datasets: every change makes one immutable version; runs pin versions."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Any

from sqlalchemy.orm import Session

from ..common.pagination import DEFAULT_LIMIT, decode_cursor, encode_cursor
from ..common.schemas import Page
from ..db.types import utcnow
from ..errors import Conflict, InvalidInput, NotFound
from ..files.repository import FileRepository
from ..files.service import to_out as file_out
from ..ids import has_prefix, new_id
from ..models import Dataset, DatasetVersion, Task
from .repository import DatasetRepository
from .schemas import DatasetCreate, DatasetOut, TaskIn, TaskOut, TaskUpdate, VersionCreate, VersionOut

TASK_FIELDS = ("instruction", "input", "expected_output", "output_schema", "metadata", "split")


def resolve_dataset(session: Session, workspace_id: str, ref: str, *, for_update: bool = False) -> Dataset:
    """A dataset by ID or by name, only within the workspace."""
    repo = DatasetRepository(session)
    dataset = None
    if has_prefix(ref, "ds"):
        dataset = repo.get(workspace_id, ref, for_update=for_update)
    if dataset is None:
        dataset = repo.get_by_name(workspace_id, ref, for_update=for_update)
    if dataset is None:
        raise NotFound(f"No dataset named or identified by '{ref}' in this workspace.")
    return dataset


def create_dataset(session: Session, workspace_id: str, body: DatasetCreate) -> Dataset:
    repo = DatasetRepository(session)
    if repo.get_by_name(workspace_id, body.name):
        raise Conflict(f"A dataset named '{body.name}' already exists; add tasks to it with a new version.",
                       errors=[{"field": "name", "message": "already exists"}])
    now = utcnow()
    dataset = repo.add(
        Dataset(id=new_id("ds"), workspace_id=workspace_id, name=body.name, description=body.description,
                latest_version=0, created_at=now, updated_at=now)
    )
    apply_version(session, workspace_id, dataset, VersionCreate(message=body.message or "created", add=body.tasks),
                  allow_empty=True, add_field="tasks")
    return dataset


def _check_files(session: Session, workspace_id: str, tasks: Sequence[TaskIn | TaskUpdate], field: str) -> None:
    wanted = {fid for task in tasks for fid in (task.files or [])}
    found = FileRepository(session).get_many(workspace_id, wanted)
    for index, task in enumerate(tasks):
        for position, file_id in enumerate(task.files or []):
            if file_id not in found:
                raise InvalidInput(f"No file {file_id} in this workspace; upload it first with POST /api/v1/files.",
                                   field=f"{field}.{index}.files.{position}")


def _task_row(dataset_id: str, key: str, version: int, values: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": new_id("task"),
        "dataset_id": dataset_id,
        "key": key,
        "first_version": version,
        "last_version": None,
        "instruction": values.get("instruction") or "",
        "input": values.get("input"),
        "expected_output": values.get("expected_output"),
        "output_schema": values.get("output_schema"),
        "metadata_": values.get("metadata"),
        "split": values.get("split"),
        "created_at": utcnow(),
    }


def _file_rows(task_id: str, file_ids: Sequence[str]) -> list[dict[str, Any]]:
    return [{"task_id": task_id, "position": i, "file_id": fid} for i, fid in enumerate(file_ids)]


def apply_version(
    session: Session,
    workspace_id: str,
    dataset: Dataset,
    body: VersionCreate,
    *,
    allow_empty: bool = False,
    add_field: str = "add",
) -> DatasetVersion:
    """Add, update and remove tasks as one new version, or change nothing and raise.
    `add_field` is what the request called the added tasks, so errors name the field the client sent."""
    if not (body.add or body.update or body.remove) and not allow_empty:
        raise InvalidInput("A new version needs at least one task to add, update or remove.", field="add")
    repo = DatasetRepository(session)
    number = dataset.latest_version + 1
    previous = number - 1

    keys_seen: dict[str, str] = {}
    for field, items in ((add_field, [t.key for t in body.add]), ("update", [t.key for t in body.update]),
                         ("remove", list(body.remove))):
        for index, key in enumerate(items):
            if key is None:
                continue
            if key in keys_seen:
                raise InvalidInput(
                    f"Task key '{key}' appears twice in this change ({keys_seen[key]} and {field}.{index}); "
                    "change each task once per version.",
                    field=f"{field}.{index}.key",
                )
            keys_seen[key] = f"{field}.{index}"
    _check_files(session, workspace_id, body.add, add_field)
    _check_files(session, workspace_id, body.update, "update")

    current = repo.current_tasks_by_key(dataset.id, list(keys_seen)) if previous > 0 else {}
    rows: list[dict[str, Any]] = []
    file_rows: list[dict[str, Any]] = []
    closed: list[str] = []

    for index, task in enumerate(body.add):
        key = task.key or f"task-{secrets.token_hex(5)}"
        if key in current:
            raise Conflict(f"Task '{key}' already exists in '{dataset.name}'; put it under 'update' to change it.",
                           errors=[{"field": f"{add_field}.{index}.key", "message": "already exists"}])
        row = _task_row(dataset.id, key, number, task.model_dump())
        rows.append(row)
        file_rows.extend(_file_rows(row["id"], task.files))

    for index, change in enumerate(body.update):
        old = current.get(change.key)
        if old is None:
            raise NotFound(f"No task '{change.key}' in the latest version of '{dataset.name}' to update.",
                           errors=[{"field": f"update.{index}.key", "message": "no such task"}])
        values = {name: getattr(old, "metadata_" if name == "metadata" else name) for name in TASK_FIELDS}
        for name in change.model_fields_set & set(TASK_FIELDS):
            values[name] = getattr(change, name)
        row = _task_row(dataset.id, old.key, number, values)
        rows.append(row)
        files = change.files if change.files is not None else repo.file_ids_of(old.id)
        file_rows.extend(_file_rows(row["id"], files))
        closed.append(old.id)

    for index, key in enumerate(body.remove):
        old = current.get(key)
        if old is None:
            raise NotFound(f"No task '{key}' in the latest version of '{dataset.name}' to remove.",
                           errors=[{"field": f"remove.{index}", "message": "no such task"}])
        closed.append(old.id)

    repo.close_revisions(closed, previous)
    repo.insert_tasks(rows, file_rows)
    previous_count = repo.get_version(dataset.id, previous).task_count if previous > 0 else 0  # type: ignore[union-attr]
    version = repo.add_version(
        DatasetVersion(
            id=new_id("dsv"),
            dataset_id=dataset.id,
            number=number,
            message=body.message,
            task_count=previous_count + len(body.add) - len(body.remove),
            added=len(body.add),
            updated=len(body.update),
            removed=len(body.remove),
        )
    )
    dataset.latest_version = number
    dataset.updated_at = utcnow()
    session.flush()
    return version


def attach_files(session: Session, workspace_id: str, dataset: Dataset, key: str, file_ids: list[str],
                 message: str | None) -> DatasetVersion:
    repo = DatasetRepository(session)
    task = repo.task_in_version(dataset.id, dataset.latest_version, key)
    if task is None:
        raise NotFound(f"No task '{key}' in the latest version of '{dataset.name}'.")
    found = FileRepository(session).get_many(workspace_id, file_ids)
    for position, file_id in enumerate(file_ids):
        if file_id not in found:
            raise InvalidInput(f"No file {file_id} in this workspace; upload it first with POST /api/v1/files.",
                               field=f"files.{position}")
    files = repo.file_ids_of(task.id) + list(file_ids)
    change = TaskUpdate(key=key, files=files)
    return apply_version(session, workspace_id, dataset,
                         VersionCreate(message=message or f"attach files to {key}", update=[change]))


def resolve_version(session: Session, dataset: Dataset, number: int | None) -> int:
    if number is None:
        return dataset.latest_version
    if number < 1 or number > dataset.latest_version:
        raise NotFound(f"Dataset '{dataset.name}' has versions 1 to {dataset.latest_version}; there is no {number}.",
                       errors=[{"field": "version", "message": "no such version"}])
    return number


def dataset_out(session: Session, dataset: Dataset) -> DatasetOut:
    version = DatasetRepository(session).get_version(dataset.id, dataset.latest_version)
    return DatasetOut(
        id=dataset.id, name=dataset.name, description=dataset.description, latest_version=dataset.latest_version,
        task_count=version.task_count if version else 0, created_at=dataset.created_at, updated_at=dataset.updated_at,
    )


def list_datasets(session: Session, workspace_id: str, *, cursor: str | None, limit: int,
                  search: str | None = None) -> Page[DatasetOut]:
    after = decode_cursor(cursor, (str,))
    rows = DatasetRepository(session).list_page(workspace_id, after_name=after[0] if after else None,
                                                limit=limit + 1, search=search)
    items = [dataset_out(session, d) for d in rows[:limit]]
    return Page(items=items, next_cursor=encode_cursor(rows[limit - 1].name) if len(rows) > limit else None)


def list_versions(session: Session, dataset: Dataset, *, cursor: str | None, limit: int) -> Page[VersionOut]:
    after = decode_cursor(cursor, (int,))
    rows = DatasetRepository(session).list_versions(dataset.id, before=after[0] if after else None, limit=limit + 1)
    items = [VersionOut.model_validate(v) for v in rows[:limit]]
    return Page(items=items, next_cursor=encode_cursor(rows[limit - 1].number) if len(rows) > limit else None)


def tasks_out(session: Session, tasks: Sequence[Task]) -> list[TaskOut]:
    files = DatasetRepository(session).files_of([t.id for t in tasks])
    return [task_out(t, files.get(t.id, [])) for t in tasks]


def task_out(task: Task, files: Sequence[Any]) -> TaskOut:
    return TaskOut(
        id=task.id, dataset_id=task.dataset_id, key=task.key, instruction=task.instruction, input=task.input,
        expected_output=task.expected_output, output_schema=task.output_schema, metadata=task.metadata_,
        split=task.split, files=[file_out(f) for f in files], version=task.first_version, created_at=task.created_at,
    )


def list_tasks(session: Session, dataset: Dataset, version: int, *, cursor: str | None, limit: int = DEFAULT_LIMIT,
               search: str | None = None) -> Page[TaskOut]:
    after = decode_cursor(cursor, (str,))
    rows = DatasetRepository(session).tasks_in_version(dataset.id, version, after_key=after[0] if after else None,
                                                       limit=limit + 1, search=search)
    items = tasks_out(session, rows[:limit])
    return Page(items=items, next_cursor=encode_cursor(rows[limit - 1].key) if len(rows) > limit else None)


def get_task_by_key(session: Session, dataset: Dataset, key: str, version: int) -> TaskOut:
    task = DatasetRepository(session).task_in_version(dataset.id, version, key)
    if task is None:
        raise NotFound(f"No task '{key}' in version {version} of '{dataset.name}'.")
    return tasks_out(session, [task])[0]


def get_task(session: Session, workspace_id: str, task_id: str) -> TaskOut:
    task = DatasetRepository(session).get_task(workspace_id, task_id)
    if task is None:
        raise NotFound(f"No task {task_id} in this workspace.")
    return tasks_out(session, [task])[0]
