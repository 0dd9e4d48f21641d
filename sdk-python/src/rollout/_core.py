"""State shared by a sync client and its async twin: settings, the background sender, request builders."""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ._config import Settings
from ._files import FileSource, is_file_id, to_source
from ._sender import Sender
from ._types import File, RunTask, Task

TASK_FIELDS = (
    "key",
    "instruction",
    "input",
    "expected_output",
    "output_schema",
    "metadata",
    "split",
    "files",
)
RUN_FILTERS = ("status", "workflow_name", "group_id", "dataset", "agent_name", "model", "tag")
EXPORT_FORMATS = ("rollout", "nemo-gym", "openai-sft", "openai-dpo", "trl-sft", "trl-dpo", "grpo")
EXPORT_FILTERS = (
    "run",
    "dataset",
    "split",
    "status",
    "score_name",
    "score_min",
    "score_max",
    "reward_min",
    "reward_max",
    "started_after",
    "started_before",
    "tag",
    "step",
    "include_discarded",
    "limit",
    "margin",
    "pairs",
    "style",
    "group_by",
)
ROLLOUT_FILTERS = (
    "run",
    "task_id",
    "status",
    "workflow_name",
    "group_id",
    "started_after",
    "started_before",
    "reward_min",
    "reward_max",
    "step",
    "group_key",
)


class Core:
    def __init__(self, settings: Settings, *, deliver_spool: bool = True) -> None:
        self.settings = settings
        self.sender = Sender(settings)
        self._lock = threading.Lock()
        if deliver_spool:
            with contextlib.suppress(Exception):  # a bad spool folder must not stop the agent
                self.sender.start_if_spool_waiting()

    def flush(self, timeout: float | None = None) -> bool:
        return self.sender.flush(timeout)

    def close(self, timeout: float | None = None) -> bool:
        return self.sender.close(timeout)


def client_key() -> str:
    """A fresh idempotency key for one start call, reused by every retry of that call: a start whose answer
    was lost and is sent again gets back the run or rollout the first try created, not a second one."""
    return uuid.uuid4().hex


def run_create_body(
    dataset: Any = None,
    *,
    version: int | None = None,
    workflow_name: str | None = None,
    group_id: str | None = None,
    agent: str | None = None,
    agent_version: str | None = None,
    model: str | None = None,
    params: Mapping[str, Any] | None = None,
    tags: Iterable[str] | None = None,
    num_repeats: int = 1,
    reward_score: str | None = None,
    only_failed_from: Any = None,
    failed_statuses: Iterable[str] | None = None,
    reward_below: float | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"num_repeats": num_repeats, "client_key": client_key()}
    if dataset is not None:
        body["dataset"] = getattr(dataset, "id", None) or str(dataset)
    optional = {
        "dataset_version": version,
        "workflow_name": workflow_name,
        "group_id": group_id,
        "agent_name": agent,
        "agent_version": agent_version,
        "model": model,
        "reward_score": reward_score,
    }
    body.update({k: v for k, v in optional.items() if v is not None})
    if params is not None:
        body["params"] = dict(params)
    if tags is not None:
        body["tags"] = list(tags)
    if only_failed_from is not None:
        body["only_failed_from"] = str(getattr(only_failed_from, "id", None) or only_failed_from)
    if failed_statuses is not None:
        body["failed_statuses"] = list(failed_statuses)
    if reward_below is not None:
        body["reward_below"] = reward_below
    return body


def rollout_create_body(
    task: Any,
    *,
    input: Any,
    repeat_index: int | None,
    step: int | None,
    group_key: str | None,
    metadata: Mapping[str, Any] | None,
) -> tuple[dict[str, Any], RunTask | None]:
    """What POST /runs/{run}/rollouts needs, and the run item the attempt will expose as `.task`."""
    body: dict[str, Any] = {"client_key": client_key()}
    item: RunTask | None = None
    if isinstance(task, RunTask):
        item = task
        body["task_id"] = task.task.id
        body["repeat_index"] = task.repeat_index
    elif isinstance(task, Task):
        item = RunTask(position=-1, repeat_index=repeat_index or 0, task=task)
        body["task_id"] = task.id
    elif isinstance(task, str):
        body["task_id"] = task
    elif task is not None:
        raise TypeError(f"start_rollout() takes an item of run.tasks, a Task or a task id, not {type(task).__name__}")
    if repeat_index is not None:
        body["repeat_index"] = repeat_index
    if input is not None:
        body["input"] = input
    if step is not None:
        body["step"] = step
    if group_key is not None:
        body["group_key"] = group_key
    if metadata is not None:
        body["metadata"] = dict(metadata)
    return body, item


def filters(names: tuple[str, ...], values: Mapping[str, Any]) -> dict[str, Any]:
    unknown = set(values) - set(names)
    if unknown:
        raise TypeError(f"unknown filter(s) {', '.join(sorted(unknown))}; use {', '.join(names)}")
    out = {}
    for key, value in values.items():
        if value is None:
            continue
        if hasattr(value, "isoformat"):
            value = value.isoformat()
        elif isinstance(value, list | tuple):
            value = [getattr(v, "id", v) if key == "run" else v for v in value]
        elif hasattr(value, "id") and key in ("run", "dataset"):
            value = value.id
        if isinstance(value, bool):
            value = "true" if value else "false"
        out[key] = value
    return out


def normalize_tasks(
    tasks: Iterable[Any], upload: Callable[[FileSource], File], *, update: bool = False
) -> list[dict[str, Any]]:
    """Task dicts (or Task objects) for the wire, uploading local files they name exactly once each.
    For `update`, a field given as None clears it and a field left out (files included) is kept."""
    uploaded: dict[str, str] = {}
    out = []
    for index, task in enumerate(tasks):
        if isinstance(task, Task):
            task = task.model_dump(include=set(TASK_FIELDS))
            task["files"] = [f["id"] if isinstance(f, dict) else f for f in task.get("files", [])]
        if not isinstance(task, Mapping):
            raise TypeError(f"task {index} must be a dict of {', '.join(TASK_FIELDS)}, not {type(task).__name__}")
        unknown = set(task) - set(TASK_FIELDS)
        if unknown:
            raise TypeError(
                f"task {index} has unknown field(s) {', '.join(sorted(unknown))}; a task has {', '.join(TASK_FIELDS)}"
            )
        clean = {k: v for k, v in task.items() if (update or v is not None) and k != "files"}
        if update and "files" not in task:
            out.append(clean)
            continue
        files = []
        for value in task.get("files") or []:
            if isinstance(value, File):
                files.append(value.id)
            elif is_file_id(value):
                files.append(value)
            else:
                source = to_source(value)
                # Same bytes under another name is another file record (the server stores the bytes once).
                identity = f"{source.digest()}|{source.name}|{source.media_type}"
                if identity not in uploaded:
                    uploaded[identity] = upload(source).id
                files.append(uploaded[identity])
        clean["files"] = files
        out.append(clean)
    return out


def split_ref(ref: Any) -> tuple[str, int] | None:
    """'47/3' or (47, 3) or 'run 47 / attempt 3' -> ('47', 3); None for a rollout id."""
    if isinstance(ref, tuple) and len(ref) == 2:
        return str(ref[0]), int(ref[1])
    if isinstance(ref, str) and "/" in ref:
        left, _, right = ref.partition("/")
        left = left.strip().removeprefix("run").strip()
        right = right.strip().removeprefix("attempt").strip()
        if right.isdigit() and left:
            return left, int(right)
    return None
