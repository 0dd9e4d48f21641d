"""Export formats: each turns a rollout record (or a group of them) into output lines (plain dicts).

- rollout     native, full fidelity; round-trips through import
- nemo-gym    NeMo Gym rollout lines: responses_create_params, response.output items, reward, numeric scores
- openai-sft  OpenAI chat fine-tuning: messages (with tool_calls) and tools
- trl-sft     TRL SFTTrainer: conversational messages, or prompt/completion
- openai-dpo  OpenAI preference fine-tuning: input, preferred_output, non_preferred_output
- trl-dpo     TRL DPOTrainer: prompt, chosen, rejected (conversational), with their rewards
- grpo        one line per group: prompt, completions, rewards, advantages
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from itertools import groupby
from typing import Any

from ..scoring.advantages import group_advantages
from .conversation import (
    NEMO_KEY,
    chat_messages,
    conversation,
    input_item,
    response_item,
    tools_chat,
    tools_responses,
)
from .schemas import ExportOptions

NATIVE_SCHEMA = "rollout.v1"
GROUP_FORMATS = ("openai-dpo", "trl-dpo", "grpo")
ROLLOUT_FIELDS = ("attempt", "repeat_index", "input", "status", "output", "error", "reward", "advantage", "discarded",
                  "discard_reason", "step", "group_key", "metadata", "started_at", "ended_at", "latency_ms",
                  "input_tokens", "output_tokens", "cost")
RUN_FIELDS = ("workflow_name", "group_id", "agent_name", "agent_version", "model", "params", "tags", "reward_score")
TASK_FIELDS = ("key", "instruction", "input", "expected_output", "output_schema", "metadata", "split", "files")


def native(record: dict[str, Any]) -> dict[str, Any]:
    """Everything about the rollout; `ref` says where it came from and is the only part an import does not keep."""
    run = record["run"]
    task = record["task"]
    line: dict[str, Any] = {
        "schema": NATIVE_SCHEMA,
        "ref": {"id": record["id"], "run_id": run["id"], "run_number": run["number"], "url": f"{run['url']}/rollouts/"
                f"{record['attempt']}", "dataset": run["dataset"], "dataset_version": run["dataset_version"]},
        "run": {k: run[k] for k in RUN_FIELDS},
        "task": {k: task[k] for k in TASK_FIELDS} if task else None,
    }
    for name in ROLLOUT_FIELDS:
        line[name] = record[name]
    line["scores"] = record["scores"]
    line["events"] = record["events"]
    return line


def numeric_scores(record: dict[str, Any]) -> dict[str, float]:
    """Latest numeric value of each score (booleans as 0/1), errors and text left out."""
    out: dict[str, float] = {}
    for score in record["scores"]:
        value = score["value"]
        if score["data_type"] in ("number", "boolean") and isinstance(value, int | float):
            out[score["name"]] = float(value)
    return out


def nemo_gym(record: dict[str, Any]) -> dict[str, Any] | None:
    if record["reward"] is None:
        return None  # a NeMo Gym rollout line always carries its reward
    convo = conversation(record)
    task_input = (record["task"] or {}).get("input") or {}
    kept = ((record.get("metadata") or {}).get(NEMO_KEY) or {}) if isinstance(record.get("metadata"), dict) else {}
    params = task_input.get("responses_create_params") if isinstance(task_input, dict) else None
    if not isinstance(params, dict):
        params = {"input": [input_item(m) for m in convo.prompt]}
        if convo.tools:
            params["tools"] = tools_responses(convo.tools)
    output = [item for item in (response_item(e) for e in convo.completion) if item is not None]
    response = {**(kept.get("response") or {"id": f"resp_{record['id']}", "object": "response"}), "output": output}
    line: dict[str, Any] = {**(kept.get("line") or {}), "responses_create_params": params, "response": response}
    reward_name = record["run"]["reward_score"]
    for name, value in numeric_scores(record).items():
        if name != reward_name and name not in ("responses_create_params", "response"):
            line[name] = value
    line["reward"] = record["reward"]
    return line


def _answers(convo: Any) -> bool:
    return any(e.get("kind") in ("message", "tool_call") and e.get("role", "assistant") == "assistant"
               for e in convo.completion)


def openai_sft(record: dict[str, Any]) -> dict[str, Any] | None:
    convo = conversation(record)
    if not _answers(convo):
        return None  # nothing the model said: no example to learn from (OpenAI refuses such lines)
    line: dict[str, Any] = {"messages": chat_messages(convo.prompt + convo.completion)}
    if convo.tools:
        line["tools"] = tools_chat(convo.tools)
    return line


def trl_sft(record: dict[str, Any], style: str) -> dict[str, Any] | None:
    convo = conversation(record)
    if not _answers(convo):
        return None
    if style == "prompt_completion":
        line = {"prompt": chat_messages(convo.prompt, trl=True),
                "completion": chat_messages(convo.completion, trl=True)}
    else:
        line = {"messages": chat_messages(convo.prompt + convo.completion, trl=True)}
    if convo.tools:
        line["tools"] = tools_chat(convo.tools)
    return line


# -- groups ---------------------------------------------------------------------------------------------

def groups(records: Iterable[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    """Consecutive records of one group (the reader orders them so), keeping only scored ones."""
    for _, members in groupby(records, key=lambda r: r["_group"]):
        scored = [m for m in members if m["reward"] is not None]
        if scored:
            yield scored


def pairs(members: list[dict[str, Any]], options: ExportOptions) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    ranked = sorted(members, key=lambda m: (-m["reward"], m["attempt"]))
    if options.pairs == "best_worst":
        if len(ranked) > 1 and ranked[0]["reward"] - ranked[-1]["reward"] >= options.margin:
            yield ranked[0], ranked[-1]
        return
    for i, better in enumerate(ranked):
        for worse in ranked[i + 1:]:
            if better["reward"] - worse["reward"] >= options.margin:
                yield better, worse


def openai_dpo(members: list[dict[str, Any]], options: ExportOptions) -> Iterator[dict[str, Any]]:
    for better, worse in pairs(members, options):
        convo, other = conversation(better), conversation(worse)
        line_input: dict[str, Any] = {"messages": chat_messages(convo.prompt)}
        if convo.tools:
            line_input["tools"] = tools_chat(convo.tools)
        yield {"input": line_input, "preferred_output": chat_messages(convo.completion),
               "non_preferred_output": chat_messages(other.completion)}


def trl_dpo(members: list[dict[str, Any]], options: ExportOptions) -> Iterator[dict[str, Any]]:
    for better, worse in pairs(members, options):
        convo, other = conversation(better), conversation(worse)
        yield {"prompt": chat_messages(convo.prompt, trl=True), "chosen": chat_messages(convo.completion, trl=True),
               "rejected": chat_messages(other.completion, trl=True), "score_chosen": better["reward"],
               "score_rejected": worse["reward"]}


def grpo(members: list[dict[str, Any]], options: ExportOptions) -> Iterator[dict[str, Any]]:
    first = members[0]
    rewards = [float(m["reward"]) for m in members]
    stored = [m["advantage"] for m in members]
    if any(a is None for a in stored):
        computed = group_advantages({0: [(m["id"], float(m["reward"])) for m in members]}, "grpo", 1e-6)
        stored = [computed[m["id"]] for m in members]
    yield {
        "prompt": chat_messages(conversation(first).prompt, trl=True),
        "completions": [chat_messages(conversation(m).completion, trl=True) for m in members],
        "rewards": rewards,
        "advantages": stored,
        "task_key": (first["task"] or {}).get("key"),
        "group_key": first["group_key"],
        "run_number": first["run"]["number"],
        "step": first["step"],
        "rollout_ids": [m["id"] for m in members],
    }


def line_maker(fmt: str, options: ExportOptions) -> Callable[[Iterable[dict[str, Any]]], Iterator[dict[str, Any]]]:
    """A function from records to output lines for the format."""
    per_rollout: dict[str, Callable[[dict[str, Any]], dict[str, Any] | None]] = {
        "rollout": native, "nemo-gym": nemo_gym, "openai-sft": openai_sft,
        "trl-sft": lambda r: trl_sft(r, options.style),
    }
    if fmt in per_rollout:
        make = per_rollout[fmt]
        return lambda records: (line for line in map(make, records) if line is not None)
    per_group = {"openai-dpo": openai_dpo, "trl-dpo": trl_dpo, "grpo": grpo}[fmt]
    return lambda records: (line for members in groups(records) for line in per_group(members, options))
