"""Importing JSONL into a new run: the native format (what `rollout` exports write) and NeMo Gym rollout lines.

Two passes over the spooled body: the first validates every line and gathers the tasks, which go into a dataset
(a new version only when a task is new or changed — re-importing an export of the same workspace reuses its
tasks); the second writes rollouts, events and scores. Everything happens in the caller's one transaction.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import IO, Any

from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session

from ..common.jsonl import json_objects
from ..common.schemas import clean_json
from ..datasets import service as datasets
from ..datasets.repository import DatasetRepository
from ..datasets.schemas import DatasetCreate, TaskIn, TaskUpdate, VersionCreate
from ..db.types import utcnow
from ..errors import InvalidInput, NotFound
from ..ids import new_id
from ..models import File, Rollout, Run, Score
from ..rollouts.ingest import EventWriter
from ..rollouts.schemas import EventIn
from ..runs import service as runs
from ..runs.schemas import RunCreate
from ..storage import BlobStore
from .formats import NATIVE_SCHEMA, RUN_FIELDS
from .nemo import record_from_line

DEFAULT_DATASET = "imported"
CHUNK = 200


@dataclass
class ImportOutcome:
    run: Run
    dataset: str | None
    dataset_version: int | None
    rollouts: int = 0
    events: int = 0
    scores: int = 0
    tasks: int = 0
    missing_files: int = 0


def records(body: IO[bytes], fmt: str, workflow_name: str | None) -> Iterator[tuple[int, dict[str, Any]]]:
    body.seek(0)
    for number, line in json_objects(body):
        if fmt == "nemo-gym":
            try:
                yield number, record_from_line(line, workflow_name=workflow_name)
            except ValueError as error:
                raise InvalidInput(f"Line {number} is not a NeMo Gym rollout: {error}.", field=f"line.{number}") \
                    from error
        else:
            if line.get("schema") != NATIVE_SCHEMA:
                raise InvalidInput(f"Line {number} is not a {NATIVE_SCHEMA} line (its schema is "
                                   f"{line.get('schema')!r}); import NeMo Gym files with format=nemo-gym.",
                                   field=f"line.{number}.schema")
            yield number, line


_TASK_KEYS = ("instruction", "input", "expected_output", "output_schema", "metadata", "split")


def _task_values(task: dict[str, Any]) -> dict[str, Any]:
    return {k: task.get(k) for k in _TASK_KEYS} | {"instruction": task.get("instruction") or ""}


class Importer:
    def __init__(self, session: Session, store: BlobStore, workspace_id: str, inline_limit: int) -> None:
        self.session = session
        self.store = store
        self.workspace_id = workspace_id
        self.inline_limit = inline_limit

    # -- pass 1: tasks and the run ------------------------------------------------------------------------

    def _file_ids(self, files: list[dict[str, Any]]) -> tuple[list[str], int]:
        ids, missing = [], 0
        for f in files or []:
            found = self.session.scalar(select(File.id).where(File.workspace_id == self.workspace_id,
                                                             File.sha256 == f.get("sha256"))
                                        .order_by(File.name != f.get("name"), File.id).limit(1))
            if found is None:
                missing += 1
            else:
                ids.append(found)
        return ids, missing

    def prepare(self, body: IO[bytes], fmt: str, dataset_name: str | None,
                workflow_name: str | None) -> tuple[ImportOutcome, dict[str, str]]:
        tasks: dict[str, dict[str, Any]] = {}
        first: dict[str, Any] | None = None
        count = 0
        for number, record in records(body, fmt, workflow_name):
            count += 1
            first = first or record
            task = record.get("task")
            if isinstance(task, dict):
                if not task.get("key"):
                    raise InvalidInput(f"Line {number}: the task has no key.", field=f"line.{number}.task.key")
                tasks.setdefault(str(task["key"]), task)
        if first is None:
            raise InvalidInput("The body holds no lines to import.", field="body")
        name = dataset_name or ((first.get("ref") or {}).get("dataset")) or DEFAULT_DATASET
        missing_files = 0
        dataset = None
        if tasks:
            dataset, missing_files = self._upsert_tasks(name, tasks)
        run_info = {k: (first.get("run") or {}).get(k) for k in RUN_FIELDS}
        if workflow_name:
            run_info["workflow_name"] = workflow_name
        try:
            body_run = RunCreate(dataset=dataset.id if dataset else None,
                                 **{k: v for k, v in run_info.items() if v is not None})
        except ValidationError as error:
            raise InvalidInput(f"Line 1: the run fields are not valid: {error.errors()[0]['msg']}.",
                               field="line.1.run") from error
        run = runs.start_run(self.session, self.workspace_id, body_run)
        keys = DatasetRepository(self.session).current_tasks_by_key(dataset.id, list(tasks)) if dataset else {}
        outcome = ImportOutcome(run=run, dataset=dataset.name if dataset else None,
                                dataset_version=run.dataset_version, tasks=len(tasks), missing_files=missing_files)
        del count
        return outcome, {key: task.id for key, task in keys.items()}

    def _upsert_tasks(self, name: str, tasks: dict[str, dict[str, Any]]) -> tuple[Any, int]:
        missing = 0
        try:
            dataset = datasets.resolve_dataset(self.session, self.workspace_id, name)
        except NotFound:
            dataset = None
        repo = DatasetRepository(self.session)
        current = repo.current_tasks_by_key(dataset.id, list(tasks)) if dataset and dataset.latest_version else {}
        add: list[TaskIn] = []
        update: list[TaskUpdate] = []
        for key, task in tasks.items():
            files, lost = self._file_ids(task.get("files") or [])
            missing += lost
            values = _task_values(task)
            old = current.get(key)
            if old is None:
                add.append(TaskIn(key=key, files=files, **values))
                continue
            old_values = {k: getattr(old, "metadata_" if k == "metadata" else k) for k in _TASK_KEYS}
            if old_values != values or repo.file_ids_of(old.id) != files:
                update.append(TaskUpdate(key=key, files=files, **values))
        if dataset is None:
            dataset = datasets.create_dataset(self.session, self.workspace_id,
                                              DatasetCreate(name=name, message="import", tasks=add))
        elif add or update:
            datasets.apply_version(self.session, self.workspace_id, dataset,
                                   VersionCreate(message="import", add=add, update=update))
        return dataset, missing

    # -- pass 2: rollouts ---------------------------------------------------------------------------------

    def write(self, body: IO[bytes], fmt: str, workflow_name: str | None, outcome: ImportOutcome,
              task_ids: dict[str, str]) -> None:
        run = outcome.run
        used: set[int] = set()
        next_attempt = 1
        chunk: list[tuple[int, dict[str, Any]]] = []

        def flush() -> None:
            nonlocal next_attempt
            planned = []
            for number, record in chunk:
                attempt = record.get("attempt")
                if not isinstance(attempt, int) or attempt < 1 or attempt in used:
                    while next_attempt in used:
                        next_attempt += 1
                    attempt = next_attempt
                used.add(attempt)
                planned.append((number, record, attempt))
            self._write_chunk(run, planned, task_ids, outcome)
            chunk.clear()

        for item in records(body, fmt, workflow_name):
            chunk.append(item)
            if len(chunk) == CHUNK:
                flush()
        if chunk:
            flush()
        run.next_attempt = max(used, default=0) + 1
        run.status = "finished"
        run.finished_at = utcnow()
        self.session.flush()

    def _write_chunk(self, run: Run, planned: list[tuple[int, dict[str, Any], int]], task_ids: dict[str, str],
                     outcome: ImportOutcome) -> None:
        made: list[tuple[Rollout, dict[str, Any]]] = []
        for _, record, attempt in planned:
            task = record.get("task")
            rollout = Rollout(
                id=new_id("ro"), workspace_id=self.workspace_id, run_id=run.id, attempt=attempt,
                task_id=task_ids.get(str(task["key"])) if isinstance(task, dict) else None,
                repeat_index=int(record.get("repeat_index") or 0), input=record.get("input"), status="running",
                step=record.get("step"), group_key=record.get("group_key"), metadata_=record.get("metadata"),
                started_at=_time(record.get("started_at")) or utcnow(),
            )
            self.session.add(rollout)
            made.append((rollout, record))
        self.session.flush()

        writer = EventWriter(self.session, self.store, self.workspace_id, self.inline_limit)
        items: list[tuple[str, EventIn]] = []
        for (rollout, record), (number, _, _) in zip(made, planned, strict=True):
            for index, event in enumerate(record.get("events") or []):
                try:
                    items.append((rollout.id, EventIn.model_validate(clean_json(event))))
                except ValidationError as error:
                    first = error.errors()[0]
                    where = ".".join(str(p) for p in first["loc"])
                    raise InvalidInput(f"Line {number}, event {index}: {first['msg']}{f' ({where})' if where else ''}.",
                                       field=f"line.{number}.events.{index}") from error
        for start in range(0, len(items), 1000):
            result = writer.write(items[start:start + 1000])
            outcome.events += result.created

        for (rollout, record), (number, _, _) in zip(made, planned, strict=True):
            self._finish(rollout, record, number, outcome)
        outcome.rollouts += len(made)
        self.session.flush()

    def _finish(self, rollout: Rollout, record: dict[str, Any], number: int, outcome: ImportOutcome) -> None:
        status = record.get("status") or "succeeded"
        if status not in ("running", "succeeded", "failed", "errored", "cancelled"):
            raise InvalidInput(f"Line {number}: unknown status {status!r}.", field=f"line.{number}.status")
        rollout.status = status
        rollout.output = record.get("output")
        rollout.error = record.get("error")
        rollout.reward = _number(record.get("reward"))
        rollout.advantage = _number(record.get("advantage"))
        rollout.discarded = bool(record.get("discarded"))
        rollout.discard_reason = record.get("discard_reason")
        rollout.ended_at = _time(record.get("ended_at"))
        rollout.latency_ms = _number(record.get("latency_ms"))
        for name in ("input_tokens", "output_tokens"):
            if isinstance(record.get(name), int):
                setattr(rollout, name, record[name])
        if _number(record.get("cost")) is not None:
            rollout.cost = float(record["cost"])
        for index, score in enumerate(record.get("scores") or []):
            if not isinstance(score, dict) or not score.get("name") or "value" not in score:
                raise InvalidInput(f"Line {number}, score {index}: a score needs a name and a value.",
                                   field=f"line.{number}.scores.{index}")
            value = score["value"]
            data_type = score.get("data_type") or ("boolean" if isinstance(value, bool) else
                                                   "number" if _number(value) is not None else "category")
            numeric = 1.0 if value is True else 0.0 if value is False else _number(value) \
                if data_type in ("number", "boolean") else None
            self.session.add(Score(
                id=new_id("score"), workspace_id=self.workspace_id, rollout_id=rollout.id, name=str(score["name"]),
                data_type=data_type, value=value, numeric_value=numeric, source=score.get("source") or "import",
                comment=score.get("comment"), author=score.get("author"),
                created_at=_time(score.get("created_at")) or utcnow(),
            ))
            outcome.scores += 1


def _number(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _time(value: Any) -> datetime | None:
    if isinstance(value, str) and value:
        return datetime.fromisoformat(value)
    return None


def import_jsonl(session: Session, store: BlobStore, workspace_id: str, body: IO[bytes], *, fmt: str,
                 dataset: str | None, workflow_name: str | None, inline_limit: int) -> ImportOutcome:
    importer = Importer(session, store, workspace_id, inline_limit)
    outcome, task_ids = importer.prepare(body, fmt, dataset, workflow_name)
    importer.write(body, fmt, workflow_name, outcome, task_ids)
    return outcome
