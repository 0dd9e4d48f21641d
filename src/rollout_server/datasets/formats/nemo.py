"""NeMo Gym task JSONL: `responses_create_params` (with `input` and `tools`) plus any other fields.

Reading: `responses_create_params` and every field that is not one of ours go into the task's `input`;
`task_key`, `instruction`, `expected_output`, `output_schema`, `metadata`, `split` and `files` map to the
task's fields (`instruction` defaults to the last user message). Writing reverses that; a task whose input
has no `responses_create_params` gets one built from its instruction, and its input is kept under `input`.
"""

from __future__ import annotations

from typing import Any

import orjson

from ...errors import InvalidInput
from ..transfer import ExportedTask, FileResolver, TaskRecord

PARAMS = "responses_create_params"
RESERVED = ("task_key", "instruction", "input", "expected_output", "output_schema", "metadata", "split", "files")


def _last_user_text(params: dict[str, Any]) -> str:
    items = params.get("input")
    if isinstance(items, str):
        return items
    for item in reversed(items if isinstance(items, list) else []):
        if not isinstance(item, dict) or item.get("role", "user") != "user":
            continue
        content = item.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def record_from_line(line: dict[str, Any], where: str, files: FileResolver) -> TaskRecord:
    params = line.get(PARAMS)
    if not isinstance(params, dict) or "input" not in params:
        raise InvalidInput(f"{where}: a NeMo Gym task line needs '{PARAMS}' with an 'input'.",
                           field=f"{where}.{PARAMS}")
    if "input" in line:
        task_input = line["input"]
    else:
        task_input = {k: v for k, v in line.items() if k not in RESERVED}
    instruction = line.get("instruction")
    refs = line.get("files") or []
    if not isinstance(refs, list):
        raise InvalidInput(f"{where}: files must be a list.", field=f"{where}.files")
    return TaskRecord(
        key=line.get("task_key"), instruction=instruction if instruction is not None else _last_user_text(params),
        input=task_input, expected_output=line.get("expected_output"), output_schema=line.get("output_schema"),
        metadata=line.get("metadata"), split=line.get("split"),
        files=[files.resolve(ref, f"{where}.files.{i}") for i, ref in enumerate(refs)],
    )


def task_line(task: ExportedTask) -> bytes:
    line: dict[str, Any]
    if isinstance(task.input, dict) and isinstance(task.input.get(PARAMS), dict):
        line = dict(task.input)
    else:
        line = {PARAMS: {"input": [{"role": "user", "content": task.instruction}]}, "input": task.input}
    line.update({"task_key": task.key, "instruction": task.instruction, "expected_output": task.expected_output,
                 "output_schema": task.output_schema, "metadata": task.metadata, "split": task.split,
                 "files": [{"sha256": f.sha256, "name": f.name} for f in task.files]})
    return orjson.dumps(line) + b"\n"
