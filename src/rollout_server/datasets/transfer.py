"""Bulk dataset transfer: the streaming writer behind every import format and the page reader behind exports.

Imports write one new version in chunks of tasks (constant memory apart from the set of keys seen): a task
whose values and files equal its current revision keeps that revision, changed ones get a new revision,
and with `replace` the keys missing from the import are removed. Exports read keyset pages of tasks, each
in its own short read transaction.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.orm import Session

from ..context import AppContext
from ..db.types import utcnow
from ..errors import InvalidInput, NotFound
from ..files.repository import FileRepository
from ..ids import has_prefix, new_id
from ..models import Dataset, DatasetVersion, File
from .repository import DatasetRepository
from .schemas import KEY_PATTERN
from .service import resolve_dataset

CHUNK = 1000
PAGE = 1000
_KEY = re.compile(KEY_PATTERN)
_SHA = re.compile(r"^[0-9a-f]{64}$")
FIELDS = ("instruction", "input", "expected_output", "output_schema", "metadata", "split")


@dataclass
class TaskRecord:
    """One task as a format reads or writes it, with its files resolved to this workspace's rows."""

    key: str | None
    instruction: str = ""
    input: dict[str, Any] | None = None
    expected_output: Any | None = None
    output_schema: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    split: str | None = None
    files: list[File] = field(default_factory=list)

    def values(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in FIELDS}


def check_record(record: TaskRecord, where: str) -> TaskRecord:
    """Types a format cannot guarantee, checked with the line or folder named."""
    if record.key is not None and (not isinstance(record.key, str) or not _KEY.match(record.key)):
        raise InvalidInput(f"{where}: the key must be 1-500 characters without '/' or control characters.",
                           field=f"{where}.key")
    if not isinstance(record.instruction, str):
        raise InvalidInput(f"{where}: instruction must be text.", field=f"{where}.instruction")
    for name in ("input", "output_schema", "metadata"):
        value = getattr(record, name)
        if value is not None and not isinstance(value, dict):
            raise InvalidInput(f"{where}: {name} must be a JSON object or null.", field=f"{where}.{name}")
    if record.split is not None and (not isinstance(record.split, str) or len(record.split) > 100):
        raise InvalidInput(f"{where}: split must be text of at most 100 characters.", field=f"{where}.split")
    return record


class FileResolver:
    """Turns the file references of an import (sha256, file ID, archive path) into this workspace's files."""

    def __init__(self, session: Session, workspace_id: str) -> None:
        self.session = session
        self.workspace_id = workspace_id
        self.by_path: dict[str, File] = {}
        self._by_sha: dict[tuple[str, str | None], File | None] = {}
        self._by_id: dict[str, File | None] = {}

    def add_archive_file(self, path: str, file: File) -> None:
        self.by_path[path] = file
        self._by_sha.setdefault((file.sha256, file.name), file)
        self._by_sha.setdefault((file.sha256, None), file)

    def sha256(self, sha: str, name: str | None) -> File | None:
        if (sha, name) not in self._by_sha:
            rows = FileRepository(self.session).by_sha256(self.workspace_id, sha)
            named = [f for f in rows if f.name == name]
            self._by_sha[(sha, name)] = (named or rows)[0] if (named or rows) else None
        return self._by_sha[(sha, name)]

    def file_id(self, file_id: str) -> File | None:
        if file_id not in self._by_id:
            self._by_id[file_id] = FileRepository(self.session).get(self.workspace_id, file_id)
        return self._by_id[file_id]

    def resolve(self, ref: Any, where: str) -> File:
        found: File | None = None
        if isinstance(ref, str):
            if _SHA.match(ref):
                found = self.sha256(ref, None)
            elif has_prefix(ref, "file"):
                found = self.file_id(ref)
            else:
                found = self.by_path.get(ref.lstrip("./"))
        elif isinstance(ref, dict):
            path, sha, name = ref.get("path"), ref.get("sha256"), ref.get("name")
            if isinstance(path, str):
                found = self.by_path.get(path.lstrip("./"))
            if found is None and isinstance(sha, str) and _SHA.match(sha):
                found = self.sha256(sha, name if isinstance(name, str) else None)
            if found is None and isinstance(ref.get("id"), str):
                found = self.file_id(ref["id"])
        if found is None:
            raise InvalidInput(f"{where}: the file {ref!r} is neither in the archive nor uploaded to this workspace "
                               "(upload it first with POST /api/v1/files, or import a zip holding it).",
                               field=where)
        return found


@dataclass
class ImportSummary:
    dataset_id: str
    dataset: str
    version: int
    created_dataset: bool
    changed: bool
    tasks: int
    added: int
    updated: int
    removed: int
    unchanged: int
    files: int


class DatasetWriter:
    """Writes one new version from a stream of task records, CHUNK tasks at a time."""

    def __init__(self, session: Session, workspace_id: str, dataset_ref: str, *, create: bool, replace: bool,
                 message: str | None, description: str | None = None) -> None:
        self.session = session
        self.repo = DatasetRepository(session)
        self.created = False
        try:
            self.dataset = resolve_dataset(session, workspace_id, dataset_ref, for_update=True)
        except NotFound:
            if not create or has_prefix(dataset_ref, "ds") or not _KEY.match(dataset_ref) or len(dataset_ref) > 200:
                raise
            now = utcnow()
            self.dataset = self.repo.add(Dataset(id=new_id("ds"), workspace_id=workspace_id, name=dataset_ref,
                                                 description=description, latest_version=0, created_at=now,
                                                 updated_at=now))
            self.created = True
        self.replace = replace
        self.message = message
        self.number = self.dataset.latest_version + 1
        self.previous = self.number - 1
        self.seen: set[str] = set()
        self.buffer: list[tuple[TaskRecord, str]] = []
        self.added = self.updated = self.removed = self.unchanged = 0
        self.file_ids: set[str] = set()

    def add(self, record: TaskRecord, where: str) -> None:
        check_record(record, where)
        if record.key is None:
            record.key = f"task-{secrets.token_hex(5)}"
        if record.key in self.seen:
            raise InvalidInput(f"{where}: task key '{record.key}' appears twice in this import; keys are unique "
                               "within a dataset.", field=f"{where}.key")
        self.seen.add(record.key)
        self.buffer.append((record, where))
        if len(self.buffer) >= CHUNK:
            self._flush()

    def _flush(self) -> None:
        batch, self.buffer = self.buffer, []
        if not batch:
            return
        current = self.repo.current_tasks_by_key(self.dataset.id, [r.key for r, _ in batch if r.key]) \
            if self.previous > 0 else {}
        current_files = self.repo.file_id_lists([t.id for t in current.values()])
        rows: list[dict[str, Any]] = []
        file_rows: list[dict[str, Any]] = []
        closed: list[str] = []
        for record, _ in batch:
            assert record.key is not None
            ids = [f.id for f in record.files]
            self.file_ids.update(ids)
            old = current.get(record.key)
            if old is not None:
                same = all(_same(getattr(old, "metadata_" if n == "metadata" else n), getattr(record, n))
                           for n in FIELDS) and current_files.get(old.id, []) == ids
                if same:
                    self.unchanged += 1
                    continue
                closed.append(old.id)
                self.updated += 1
            else:
                self.added += 1
            task_id = new_id("task")
            rows.append({"id": task_id, "dataset_id": self.dataset.id, "key": record.key,
                         "first_version": self.number, "last_version": None, "instruction": record.instruction or "",
                         "input": record.input, "expected_output": record.expected_output,
                         "output_schema": record.output_schema, "metadata_": record.metadata,
                         "split": record.split, "created_at": utcnow()})
            file_rows.extend({"task_id": task_id, "position": i, "file_id": fid} for i, fid in enumerate(ids))
        self.repo.close_revisions(closed, self.previous)
        self.repo.insert_tasks(rows, file_rows)

    def finish(self) -> ImportSummary:
        self._flush()
        if self.replace and self.previous > 0:
            gone = [tid for tid, key in self.repo.open_revisions(self.dataset.id, self.previous)
                    if key not in self.seen]
            self.removed = len(gone)
            self.repo.close_revisions(gone, self.previous)
        changed = bool(self.added or self.updated or self.removed) or self.created
        count = 0
        if changed:
            before = self.repo.get_version(self.dataset.id, self.previous) if self.previous > 0 else None
            count = (before.task_count if before else 0) + self.added - self.removed
            self.repo.add_version(DatasetVersion(
                id=new_id("dsv"), dataset_id=self.dataset.id, number=self.number, message=self.message,
                task_count=count, added=self.added, updated=self.updated, removed=self.removed))
            self.dataset.latest_version = self.number
            self.dataset.updated_at = utcnow()
        else:
            version = self.repo.get_version(self.dataset.id, self.previous)
            count = version.task_count if version else 0
        self.session.flush()
        return ImportSummary(dataset_id=self.dataset.id, dataset=self.dataset.name,
                             version=self.dataset.latest_version, created_dataset=self.created, changed=changed,
                             tasks=count, added=self.added, updated=self.updated, removed=self.removed,
                             unchanged=self.unchanged, files=len(self.file_ids))


def _same(stored: Any, given: Any) -> bool:
    return bool(stored == given and type(stored) is type(given)) or (stored in (None, "") and given in (None, ""))


@dataclass
class ExportedTask:
    key: str
    instruction: str
    input: dict[str, Any] | None
    expected_output: Any | None
    output_schema: dict[str, Any] | None
    metadata: dict[str, Any] | None
    split: str | None
    files: list[File]


def export_pages(ctx: AppContext, dataset_id: str, version: int) -> Iterator[list[ExportedTask]]:
    """The version's tasks by key, PAGE at a time, each page read in its own short transaction."""
    after: str | None = None
    while True:
        with ctx.db.reading() as session:
            repo = DatasetRepository(session)
            tasks = repo.tasks_in_version(dataset_id, version, after_key=after, limit=PAGE)
            files = repo.files_of([t.id for t in tasks])
            page = [ExportedTask(key=t.key, instruction=t.instruction, input=t.input,
                                 expected_output=t.expected_output, output_schema=t.output_schema,
                                 metadata=t.metadata_, split=t.split, files=files.get(t.id, [])) for t in tasks]
        if not page:
            return
        yield page
        if len(page) < PAGE:
            return
        after = page[-1].key


