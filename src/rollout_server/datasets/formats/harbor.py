"""Harbor-style task folders: `dataset.toml` and one folder per task (layout in docs/datasets.md).

A task folder holds `instruction.md`, `task.toml` and its files: attached files under `files/`, and
`tests/`, `solution/`, `environment/` or anything else kept as files at their paths. Harbor's own tables
(`[verifier]`, `[agent]`, `[environment]`, ...) and non-default file paths travel in the task's metadata
under `harbor`, so a folder read and written again keeps them.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
import zipfile
from collections.abc import Iterator
from typing import Any

import orjson

from ...errors import InvalidInput
from ..archive import check_name
from ..transfer import ExportedTask, TaskRecord
from . import toml

HARBOR = "harbor"
_FOLDER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,100}$")
# Fields of ours kept as JSON text in task.toml: TOML has no null and no mixed nesting of every JSON value.
JSON_FIELDS = ("input", "expected_output", "output_schema")


def folder_name(key: str) -> str:
    if _FOLDER.match(key):
        return key
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", key).strip("-.")[:60] or "task"
    return f"{slug}-{hashlib.sha256(key.encode()).hexdigest()[:10]}"


def _safe_path(path: object) -> bool:
    """A path kept in metadata is written into archives: it must stay inside its task folder."""
    if not isinstance(path, str) or path in ("task.toml", "instruction.md"):
        return False
    try:
        return check_name(path) == path
    except InvalidInput:
        return False


def file_paths(task: ExportedTask) -> list[str]:
    harbor = (task.metadata or {}).get(HARBOR)
    paths = harbor.get("paths") if isinstance(harbor, dict) else None
    if isinstance(paths, list) and len(paths) == len(task.files) and len(set(paths)) == len(paths) \
            and all(_safe_path(p) for p in paths):
        return [str(p) for p in paths]
    names: list[str] = []
    for index, file in enumerate(task.files):
        path = f"files/{file.name}"
        names.append(path if path not in names else f"files/{index}-{file.name}")
    return names


def task_toml(task: ExportedTask, paths: list[str]) -> str:
    metadata = dict(task.metadata or {})
    harbor = metadata.pop(HARBOR, None)
    tables = {k: v for k, v in harbor.items() if k != "paths" and isinstance(v, dict)} \
        if isinstance(harbor, dict) else {}
    extra_harbor = {k: v for k, v in harbor.items() if k != "paths" and not isinstance(v, dict)} \
        if isinstance(harbor, dict) else {}
    rollout: dict[str, Any] = {"key": task.key}
    if task.split is not None:
        rollout["split"] = task.split
    for name in JSON_FIELDS:
        if getattr(task, name) is not None:
            rollout[name] = orjson.dumps(getattr(task, name)).decode()
    rollout["files"] = paths
    parts = ['version = "1.0"\n']
    try:
        metadata_part = toml.table("metadata", metadata) if task.metadata is not None else ""
        harbor_parts = [toml.table(name, values) for name, values in tables.items()]
        if extra_harbor:
            raise toml.NotToml("harbor values outside tables")
    except toml.NotToml:
        metadata_part, harbor_parts = "", []
        rollout["metadata"] = orjson.dumps(task.metadata).decode()
    parts.append(toml.table("rollout", rollout))
    if metadata_part:
        parts.append(metadata_part)
    parts.extend(harbor_parts)
    return "\n".join(parts)


def dataset_toml(name: str, description: str | None, version: int, tasks: list[tuple[str, str]]) -> str:
    head: dict[str, Any] = {"name": name, "version": str(version)}
    if description:
        head["description"] = description
    parts = [toml.table("dataset", head)]
    parts.extend(f"[[tasks]]\nname = {toml.string(key)}\npath = {toml.string(path)}\n" for key, path in tasks)
    return "\n".join(parts)


# -- reading ---------------------------------------------------------------------------------------------


def task_folders(entries: list[tuple[str, zipfile.ZipInfo]]) -> list[tuple[str, dict[str, zipfile.ZipInfo]]]:
    """(folder, {relative path: entry}) for each folder holding a task.toml, in path order."""
    folders = sorted({path[: -len("task.toml")].rstrip("/") for path, _ in entries
                      if path == "task.toml" or path.endswith("/task.toml")})
    if not folders:
        raise InvalidInput("The archive holds no task folder (a folder with a task.toml); see docs/datasets.md "
                           "for the Harbor layout.", field="archive")
    members: dict[str, dict[str, zipfile.ZipInfo]] = {folder: {} for folder in folders}
    known = set(folders)
    for path, info in entries:
        parent = path.rsplit("/", 1)[0] if "/" in path else ""
        # The nearest enclosing task folder owns the entry.
        while True:
            if parent in known:
                members[parent][path[len(parent) + 1:] if parent else path] = info
                break
            if not parent:
                break
            parent = parent.rsplit("/", 1)[0] if "/" in parent else ""
    return [(folder, members[folder]) for folder in folders]


def parse_task(folder: str, config_text: bytes, instruction: bytes | None,
               paths: list[str]) -> tuple[TaskRecord, list[str]]:
    """The task of one folder, and the relative paths of its files in order (files not resolved yet)."""
    where = f"{folder or '.'}/task.toml"
    try:
        config = tomllib.loads(config_text.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise InvalidInput(f"{where} is not valid TOML: {error}.", field=where) from error
    ours = config.pop("rollout", {})
    config.pop("version", None)
    if not isinstance(ours, dict):
        raise InvalidInput(f"{where}: [rollout] must be a table.", field=where)
    values: dict[str, Any] = {}
    for name in (*JSON_FIELDS, "metadata"):
        if name in ours:
            try:
                values[name] = orjson.loads(ours[name])
            except (orjson.JSONDecodeError, TypeError) as error:
                raise InvalidInput(f"{where}: rollout.{name} must be JSON text.", field=f"{where}.{name}") \
                    from error
    metadata = values.get("metadata")
    if "metadata" not in values:
        metadata = config.pop("metadata", None)
        harbor_tables = {k: v for k, v in config.items() if isinstance(v, dict)}
        if harbor_tables:
            metadata = {**(metadata or {}), HARBOR: harbor_tables}
    order = ours.get("files")
    if isinstance(order, list) and all(isinstance(p, str) for p in order):
        missing = [p for p in order if p not in paths]
        if missing:
            raise InvalidInput(f"{where}: rollout.files names {missing[0]!r}, which is not in the folder.",
                               field=f"{where}.files")
        files = list(order) + sorted(p for p in paths if p not in order)
    else:
        files = sorted(paths)
    default = [f"files/{p.rsplit('/', 1)[-1]}" for p in files]
    if files != default:
        harbor = dict((metadata or {}).get(HARBOR) or {})
        harbor["paths"] = files
        metadata = {**(metadata or {}), HARBOR: harbor}
    key = ours.get("key") or (folder.rsplit("/", 1)[-1] if folder else None)
    record = TaskRecord(
        key=key, instruction=instruction.decode("utf-8", errors="replace") if instruction is not None else "",
        input=values.get("input"), expected_output=values.get("expected_output"),
        output_schema=values.get("output_schema"), metadata=metadata, split=ours.get("split"),
    )
    return record, files


def ordered(entries: dict[str, zipfile.ZipInfo]) -> Iterator[str]:
    yield from sorted(p for p in entries if p not in ("task.toml", "instruction.md"))
