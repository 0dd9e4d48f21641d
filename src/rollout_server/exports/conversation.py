"""From a trace to a conversation: the prompt (leading system/developer/user messages, or the task's
instruction), the completion (what the agent did after it), and the tools it could call — in the three message
dialects the export formats speak: OpenAI chat, OpenAI Responses items (NeMo Gym), and TRL.

Reasoning events are kept only in Responses items (chat fine-tuning formats have no place for them); `llm_call`,
`log`, `span` and `error` events are not conversation and are left out of every dialect.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

PROMPT_ROLES = ("system", "developer", "user")
NEMO_KEY = "nemo_gym"  # event/rollout metadata holding the fields of an imported NeMo Gym item we do not model


def text_of(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(p, dict) for p in value):
        texts = [p.get("text") for p in value if isinstance(p.get("text"), str)]
        if texts and len(texts) == len(value):
            return "".join(texts)  # type: ignore[arg-type]
    return orjson.dumps(value).decode()


def arguments_text(arguments: Any) -> str:
    if isinstance(arguments, str):
        return arguments
    return orjson.dumps(arguments if arguments is not None else {}).decode()


def arguments_object(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            return orjson.loads(arguments)
        except orjson.JSONDecodeError:
            return arguments
    return arguments if arguments is not None else {}


@dataclass
class Conversation:
    prompt: list[dict[str, Any]]       # message events (role, content) before the agent's first step
    completion: list[dict[str, Any]]   # events after it: message, reasoning, tool_call, tool_result
    tools: list[dict[str, Any]]        # as found (Responses or chat shape); see tools_chat / tools_responses


def _task_prompt(record: dict[str, Any]) -> dict[str, Any] | None:
    task = record.get("task") or {}
    text = task.get("instruction") or ""
    extra = task.get("input") if task else record.get("input")
    if isinstance(extra, dict) and "responses_create_params" in extra:
        extra = None
    if extra not in (None, {}, ""):
        text = f"{text}\n\n{text_of(extra)}" if text else text_of(extra)
    if not text:
        return None
    return {"kind": "message", "role": "user", "content": text}


def _tools(record: dict[str, Any], events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    task_input = (record.get("task") or {}).get("input") or {}
    params = task_input.get("responses_create_params") if isinstance(task_input, dict) else None
    candidates = [
        params.get("tools") if isinstance(params, dict) else None,
        task_input.get("tools") if isinstance(task_input, dict) else None,
        record["input"].get("tools") if isinstance(record.get("input"), dict) else None,
        next((e.get("tools") for e in events if e.get("kind") == "llm_call" and e.get("tools")), None),
        ((record.get("run") or {}).get("params") or {}).get("tools"),
    ]
    for found in candidates:
        if isinstance(found, list) and found:
            return [t for t in found if isinstance(t, dict)]
    return []


def conversation(record: dict[str, Any]) -> Conversation:
    events = record.get("events") or []
    prompt: list[dict[str, Any]] = []
    index = 0
    while index < len(events):
        event = events[index]
        if event.get("kind") == "message" and event.get("role") in PROMPT_ROLES:
            prompt.append(event)
        elif event.get("kind") in ("message", "reasoning", "tool_call", "tool_result"):
            break
        index += 1
    completion = [e for e in events[index:] if e.get("kind") in ("message", "reasoning", "tool_call", "tool_result")]
    if not any(m.get("role") == "user" for m in prompt):
        asked = _task_prompt(record)
        if asked is not None:
            prompt.append(asked)
    output = record.get("output")
    ends_with_answer = bool(completion) and completion[-1].get("kind") == "message" \
        and completion[-1].get("role") == "assistant" and completion[-1].get("content") not in (None, "", [])
    if output is not None and not ends_with_answer and record.get("status") != "errored":
        # The trace stops before the answer (or was never recorded): the rollout's output is the last turn.
        completion.append({"kind": "message", "role": "assistant", "content": text_of(output)})
    return Conversation(prompt=prompt, completion=completion, tools=_tools(record, events))


# -- OpenAI chat and TRL --------------------------------------------------------------------------------

def _chat_message(event: dict[str, Any]) -> dict[str, Any]:
    content = event.get("content")
    return {"role": event.get("role"), "content": content if isinstance(content, str) or content is None
            else text_of(content)}


def chat_messages(events: list[dict[str, Any]], *, trl: bool = False) -> list[dict[str, Any]]:
    """Messages in the OpenAI chat shape (arguments as JSON text, tool_call_id), or TRL's (arguments as an
    object, tool results carry the tool's name)."""
    out: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    for event in events:
        kind = event.get("kind")
        if kind == "message":
            out.append(_chat_message(event))
        elif kind == "tool_call":
            call_id = str(event.get("call_id") or event.get("id"))
            names[call_id] = str(event.get("name"))
            function = {"name": event.get("name"),
                        "arguments": arguments_object(event.get("arguments")) if trl
                        else arguments_text(event.get("arguments"))}
            call = {"type": "function", "function": function} if trl else \
                {"id": call_id, "type": "function", "function": function}
            last = out[-1] if out else None
            if last is not None and last["role"] == "assistant":
                last.setdefault("tool_calls", []).append(call)
            else:
                out.append({"role": "assistant", "content": None if not trl else "", "tool_calls": [call]})
        elif kind == "tool_result":
            call_id = str(event.get("call_id"))
            message = {"role": "tool", "content": text_of(event.get("output"))}
            if trl:
                message = {"role": "tool", "name": names.get(call_id, ""), "content": message["content"]}
            else:
                message = {"role": "tool", "tool_call_id": call_id, "content": message["content"]}
            out.append(message)
    return out


def tools_chat(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tools in the chat-completions shape: {"type": "function", "function": {name, description, parameters}}."""
    out = []
    for tool in tools:
        if "function" in tool:
            out.append(tool)
        elif tool.get("type", "function") == "function" and tool.get("name"):
            function = {k: tool[k] for k in ("name", "description", "parameters", "strict") if k in tool}
            out.append({"type": "function", "function": function})
    return out


def tools_responses(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tools in the Responses shape: {"type": "function", name, description, parameters}."""
    out = []
    for tool in tools:
        if isinstance(tool.get("function"), dict):
            out.append({"type": "function", **tool["function"]})
        else:
            out.append(tool)
    return out


# -- OpenAI Responses items (NeMo Gym) ------------------------------------------------------------------

def _kept(event: dict[str, Any]) -> dict[str, Any]:
    kept = (event.get("metadata") or {}).get(NEMO_KEY)
    return dict(kept) if isinstance(kept, dict) else {}


def response_item(event: dict[str, Any]) -> dict[str, Any] | None:
    kind = event.get("kind")
    kept = _kept(event)
    if kind == "message":
        content = event.get("content")
        if event.get("role") == "assistant" and isinstance(content, str) and not kept:
            content = [{"type": "output_text", "text": content, "annotations": []}]
        if kept.pop("_no_type", False):
            return {**kept, "role": event.get("role"), "content": content}
        return {**kept, "type": "message", "role": event.get("role"), "content": content}
    if kind == "reasoning":
        if "summary" in kept:
            return {"type": "reasoning", **kept}
        text = text_of(event.get("content"))
        return {**kept, "type": "reasoning", "summary": [{"type": "summary_text", "text": text}]}
    if kind == "tool_call":
        return {**kept, "type": "function_call", "name": event.get("name"),
                "arguments": arguments_text(event.get("arguments")),
                "call_id": str(event.get("call_id") or event.get("id"))}
    if kind == "tool_result":
        output = event.get("output")
        return {**kept, "type": "function_call_output", "call_id": str(event.get("call_id")),
                "output": output if isinstance(output, str | list) else text_of(output)}
    if kind == "log" and kept.get("type"):
        return kept  # an imported item of a type we do not model, given back as it came
    return None


def input_item(event: dict[str, Any]) -> dict[str, Any]:
    return {"type": "message", "role": event.get("role"), "content": event.get("content")}
