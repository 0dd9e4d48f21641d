"""NeMo Gym rollout lines → native records: the prompt becomes the task (its `responses_create_params` kept
whole in the task's input), the input and output items become trace events, `reward` and the other top-level
numbers become scores. Item fields we do not model go to the event's `metadata.nemo_gym`, and the rest of the
line and of the response to the rollout's, so exporting as nemo-gym gives the same items back."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from ..scoring.base import content_text
from .conversation import NEMO_KEY

ITEM_FIELDS = {
    "message": ("type", "role", "content"),
    "function_call": ("type", "name", "arguments", "call_id"),
    "function_call_output": ("type", "call_id", "output"),
    "reasoning": ("type",),
}


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def item_event(item: Any, event_id: str, seq: int) -> dict[str, Any]:
    if isinstance(item, str):
        item = {"role": "user", "content": item}
    if not isinstance(item, dict):
        raise ValueError(f"an item must be an object, got {str(item)[:80]}")
    kind = item.get("type") or ("message" if "role" in item else None)
    kept = {k: v for k, v in item.items() if k not in ITEM_FIELDS.get(kind or "", ())}
    event: dict[str, Any] = {"id": event_id, "seq": seq}
    if kind == "message":
        event.update(kind="message", role=item.get("role"), content=item.get("content"))
        if "type" not in item:
            kept["_no_type"] = True
    elif kind == "function_call":
        event.update(kind="tool_call", name=item.get("name") or "unknown", arguments=item.get("arguments"),
                     call_id=item.get("call_id"))
    elif kind == "function_call_output":
        event.update(kind="tool_result", call_id=item.get("call_id") or "unknown", output=item.get("output"))
    elif kind == "reasoning":
        summary = item.get("summary") or []
        text = "\n".join(content_text(s.get("text") if isinstance(s, dict) else s) for s in summary) \
            if isinstance(summary, list) else content_text(summary)
        event.update(kind="reasoning", content=text)
    else:
        event.update(kind="log", message=f"{kind} item")
        kept = dict(item)
    if kept:
        event["metadata"] = {NEMO_KEY: kept}
    return event


def record_from_line(line: dict[str, Any], *, workflow_name: str | None) -> dict[str, Any]:
    params = line.get("responses_create_params")
    response = line.get("response")
    if not isinstance(params, dict):
        raise ValueError("responses_create_params is missing or not an object")
    if not isinstance(response, dict) or not isinstance(response.get("output", []), list):
        raise ValueError("response is missing or has no output list")
    items_in = params.get("input")
    items_in = [items_in] if isinstance(items_in, str) else list(items_in or [])
    events = [item_event(item, f"ng-in-{i}", i + 1) for i, item in enumerate(items_in)]
    offset = len(events)
    events += [item_event(item, f"ng-out-{i}", offset + i + 1) for i, item in enumerate(response.get("output") or [])]

    user_texts = [content_text(i.get("content")) if isinstance(i, dict) else str(i) for i in items_in
                  if isinstance(i, str) or (isinstance(i, dict) and i.get("role") == "user")]
    task_index = line.get("_ng_task_index")
    if isinstance(task_index, int) and not isinstance(task_index, bool):
        key = f"task-{task_index}"
    else:
        key = "ng-" + hashlib.sha256(orjson.dumps(params, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]
    reward = line.get("reward")
    scores = []
    if _is_number(reward):
        scores.append({"name": "reward", "data_type": "number", "value": float(reward), "source": "import"})  # type: ignore[arg-type]
    extras: dict[str, Any] = {}
    for name, value in line.items():
        if name in ("responses_create_params", "response", "reward"):
            continue
        if _is_number(value) and not name.startswith("_") and len(name) <= 200:
            scores.append({"name": name, "data_type": "number", "value": float(value), "source": "import"})
        else:
            extras[name] = value
    rollout_index = line.get("_ng_rollout_index")
    return {
        "run": {"workflow_name": workflow_name or "nemo-gym import", "reward_score": "reward"},
        "task": {"key": key, "instruction": user_texts[-1] if user_texts else "",
                 "input": {"responses_create_params": params}},
        "attempt": None,
        "repeat_index": rollout_index if isinstance(rollout_index, int) and rollout_index >= 0 else 0,
        "status": "errored" if response.get("error") else "succeeded",
        "error": orjson.dumps(response["error"]).decode() if response.get("error") else None,
        "reward": float(reward) if _is_number(reward) else None,  # type: ignore[arg-type]
        "metadata": {NEMO_KEY: {"response": {k: v for k, v in response.items() if k != "output"}, "line": extras}},
        "scores": scores,
        "events": events,
    }
