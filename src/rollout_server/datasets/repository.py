"""Queries for datasets, versions and task revisions."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import and_, func, insert, or_, select, update
from sqlalchemy.orm import Session

from ..models import Dataset, DatasetVersion, File, Task, TaskFile

IN_CHUNK = 500


def _chunks(values: Sequence[str], size: int = IN_CHUNK) -> Iterable[Sequence[str]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


def visible_in(version: int) -> Any:
    """Task revisions that belong to dataset version `version`."""
    return and_(Task.first_version <= version, or_(Task.last_version.is_(None), Task.last_version >= version))


class DatasetRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def get(self, workspace_id: str, dataset_id: str, *, for_update: bool = False) -> Dataset | None:
        query = select(Dataset).where(Dataset.id == dataset_id, Dataset.workspace_id == workspace_id)
        if for_update:
            query = query.with_for_update()
        return self.session.scalar(query)

    def get_by_name(self, workspace_id: str, name: str, *, for_update: bool = False) -> Dataset | None:
        query = select(Dataset).where(Dataset.name == name, Dataset.workspace_id == workspace_id)
        if for_update:
            query = query.with_for_update()
        return self.session.scalar(query)

    def list_page(self, workspace_id: str, *, after_name: str | None, limit: int, search: str | None) -> list[Dataset]:
        query = select(Dataset).where(Dataset.workspace_id == workspace_id)
        if search:
            query = query.where(Dataset.name.ilike(f"%{search}%"))
        if after_name is not None:
            query = query.where(Dataset.name > after_name)
        return list(self.session.scalars(query.order_by(Dataset.name).limit(limit)))

    def add(self, dataset: Dataset) -> Dataset:
        self.session.add(dataset)
        self.session.flush()
        return dataset

    def get_version(self, dataset_id: str, number: int) -> DatasetVersion | None:
        return self.session.scalar(
            select(DatasetVersion).where(DatasetVersion.dataset_id == dataset_id, DatasetVersion.number == number)
        )

    def list_versions(self, dataset_id: str, *, before: int | None, limit: int) -> list[DatasetVersion]:
        query = select(DatasetVersion).where(DatasetVersion.dataset_id == dataset_id)
        if before is not None:
            query = query.where(DatasetVersion.number < before)
        return list(self.session.scalars(query.order_by(DatasetVersion.number.desc()).limit(limit)))

    def add_version(self, version: DatasetVersion) -> DatasetVersion:
        self.session.add(version)
        self.session.flush()
        return version

    def current_tasks_by_key(self, dataset_id: str, keys: Sequence[str]) -> dict[str, Task]:
        found: dict[str, Task] = {}
        for chunk in _chunks(list(dict.fromkeys(keys))):
            rows = self.session.scalars(
                select(Task).where(Task.dataset_id == dataset_id, Task.last_version.is_(None), Task.key.in_(chunk))
            )
            found.update({task.key: task for task in rows})
        return found

    def close_revisions(self, task_ids: Sequence[str], last_version: int) -> None:
        for chunk in _chunks(list(task_ids)):
            self.session.execute(update(Task).where(Task.id.in_(chunk)).values(last_version=last_version))

    def insert_tasks(self, rows: list[dict[str, Any]], file_rows: list[dict[str, Any]]) -> None:
        if rows:
            self.session.execute(insert(Task), rows)
        if file_rows:
            self.session.execute(insert(TaskFile), file_rows)

    def tasks_in_version(
        self, dataset_id: str, version: int, *, after_key: str | None, limit: int, search: str | None = None
    ) -> list[Task]:
        query = select(Task).where(Task.dataset_id == dataset_id, visible_in(version))
        if after_key is not None:
            query = query.where(Task.key > after_key)
        if search:
            pattern = f"%{search}%"
            query = query.where(or_(Task.key.ilike(pattern), Task.instruction.ilike(pattern)))
        return list(self.session.scalars(query.order_by(Task.key).limit(limit)))

    def count_in_version(self, dataset_id: str, version: int) -> int:
        return int(
            self.session.scalar(select(func.count()).select_from(Task).where(Task.dataset_id == dataset_id,
                                                                              visible_in(version))) or 0
        )

    def task_in_version(self, dataset_id: str, version: int, key: str) -> Task | None:
        return self.session.scalar(
            select(Task).where(Task.dataset_id == dataset_id, Task.key == key, visible_in(version))
        )

    def get_task(self, workspace_id: str, task_id: str) -> Task | None:
        return self.session.scalar(
            select(Task)
            .join(Dataset, Dataset.id == Task.dataset_id)
            .where(Task.id == task_id, Dataset.workspace_id == workspace_id)
        )

    def get_tasks(self, task_ids: Sequence[str]) -> dict[str, Task]:
        found: dict[str, Task] = {}
        for chunk in _chunks(list(set(task_ids))):
            found.update({t.id: t for t in self.session.scalars(select(Task).where(Task.id.in_(chunk)))})
        return found

    def files_of(self, task_ids: Sequence[str]) -> dict[str, list[File]]:
        files: dict[str, list[File]] = {task_id: [] for task_id in task_ids}
        for chunk in _chunks(list(task_ids)):
            rows = self.session.execute(
                select(TaskFile.task_id, File)
                .join(File, File.id == TaskFile.file_id)
                .where(TaskFile.task_id.in_(chunk))
                .order_by(TaskFile.task_id, TaskFile.position)
            )
            for task_id, file in rows:
                files[task_id].append(file)
        return files

    def file_ids_of(self, task_id: str) -> list[str]:
        return list(
            self.session.scalars(
                select(TaskFile.file_id).where(TaskFile.task_id == task_id).order_by(TaskFile.position)
            )
        )

    def file_id_lists(self, task_ids: Sequence[str]) -> dict[str, list[str]]:
        """File IDs of each task revision, in order."""
        found: dict[str, list[str]] = {task_id: [] for task_id in task_ids}
        for chunk in _chunks(list(task_ids)):
            rows = self.session.execute(
                select(TaskFile.task_id, TaskFile.file_id).where(TaskFile.task_id.in_(chunk))
                .order_by(TaskFile.task_id, TaskFile.position)
            )
            for task_id, file_id in rows:
                found[task_id].append(file_id)
        return found

    def open_revisions(self, dataset_id: str, up_to_version: int) -> list[tuple[str, str]]:
        """(id, key) of the current revisions that existed by `up_to_version`."""
        rows = self.session.execute(
            select(Task.id, Task.key).where(Task.dataset_id == dataset_id, Task.last_version.is_(None),
                                            Task.first_version <= up_to_version)
        )
        return [(task_id, key) for task_id, key in rows]

    def changed_between(self, dataset_id: str, low: int, high: int, *, after_key: str | None,
                        limit: int) -> list[Task]:
        """Revisions visible in exactly one of two versions (what a diff shows), by key."""
        query = select(Task).where(
            Task.dataset_id == dataset_id,
            or_(visible_in(low), visible_in(high)),
            ~and_(visible_in(low), visible_in(high)),
        )
        if after_key is not None:
            query = query.where(Task.key > after_key)
        return list(self.session.scalars(query.order_by(Task.key, Task.first_version).limit(limit)))

