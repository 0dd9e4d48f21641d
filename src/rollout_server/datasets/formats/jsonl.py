"""The JSONL task format: one task per line, files by archive path, SHA-256 or file ID.

As a zip: `tasks.jsonl` plus `files/<sha256>/<name>` for every file a task references. As plain JSONL,
files must already be uploaded to the workspace (referenced by `sha256` or `id`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import IO, Any

import orjson

from ...common.jsonl import json_objects
from ...errors import InvalidInput
from ..transfer import ExportedTask, FileResolver, TaskRecord

TASKS_NAME = "tasks.jsonl"


def file_path(sha256: str, name: str) -> str:
    return f"files/{sha256}/{name}"


def task_line(task: ExportedTask, *, with_paths: bool) -> bytes:
    files = []
    for f in task.files:
        entry: dict[str, Any] = {"name": f.name, "sha256": f.sha256, "size": f.size, "media_type": f.media_type}
        if with_paths:
            entry = {"path": file_path(f.sha256, f.name), **entry}
        files.append(entry)
    line = {"key": task.key, "instruction": task.instruction, "input": task.input,
            "expected_output": task.expected_output, "output_schema": task.output_schema,
            "metadata": task.metadata, "split": task.split, "files": files}
    return orjson.dumps(line) + b"\n"


def parse_lines(lines: Iterable[bytes], label: str = "line") -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, object) for each non-blank JSONL line; `where` names the line for error messages."""
    for number, value in json_objects(lines, label):
        yield f"{label}.{number}", value


def iter_lines(source: IO[bytes]) -> Iterator[bytes]:
    yield from source


def record_from_line(line: dict[str, Any], where: str, files: FileResolver) -> TaskRecord:
    refs = line.get("files") or []
    if not isinstance(refs, list):
        raise InvalidInput(f"{where}: files must be a list.", field=f"{where}.files")
    return TaskRecord(
        key=line.get("key"), instruction=line.get("instruction") or "", input=line.get("input"),
        expected_output=line.get("expected_output"), output_schema=line.get("output_schema"),
        metadata=line.get("metadata"), split=line.get("split"),
        files=[files.resolve(ref, f"{where}.files.{i}") for i, ref in enumerate(refs)],
    )
