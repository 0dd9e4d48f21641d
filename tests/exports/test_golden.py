"""Golden files: a fixed set of rollouts (imported from golden/rollouts.jsonl) exported in every format must equal
the reviewed expected file; the native format round-trips import → export unchanged; a NeMo Gym file imports
with its rewards and items and exports back as the same lines.

Regenerate the expected files after a deliberate format change with UPDATE_GOLDEN=1, then review the diff.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from tests.conftest import Tenant
from tests.exports.helpers import GOLDEN, export_text, import_file, parse, read_lines

CASES = [
    ("rollout", {"include_discarded": "true"}, "rollout.jsonl"),
    ("nemo-gym", {}, "nemo-gym.jsonl"),
    ("openai-sft", {}, "openai-sft.jsonl"),
    ("trl-sft", {}, "trl-sft.jsonl"),
    ("trl-sft", {"style": "prompt_completion"}, "trl-sft-prompt-completion.jsonl"),
    ("openai-dpo", {}, "openai-dpo.jsonl"),
    ("trl-dpo", {"margin": 0.5}, "trl-dpo.jsonl"),
    ("grpo", {}, "grpo.jsonl"),
]


def check_golden(name: str, lines: list[dict[str, Any]]) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
    assert lines == read_lines(path), f"{name} differs from the reviewed file (UPDATE_GOLDEN=1 to regenerate)"


@pytest.mark.parametrize(("fmt", "params", "golden"), CASES, ids=[c[2] for c in CASES])
async def test_export_matches_golden_file(api: Tenant, fmt: str, params: dict[str, str], golden: str) -> None:
    imported = await import_file(api.client, GOLDEN / "rollouts.jsonl")
    assert imported["rollouts"] == 9 and imported["run"]["number"] == 1
    text = await export_text(api.client, fmt, run=imported["run"]["id"], **params)
    check_golden(golden, parse(text))


async def test_native_round_trip_is_unchanged(api: Tenant) -> None:
    source = read_lines(GOLDEN / "rollouts.jsonl")
    first = await import_file(api.client, GOLDEN / "rollouts.jsonl")
    assert (first["tasks"], first["events"], first["scores"]) == (3, 21, 12)
    exported = parse(await export_text(api.client, "rollout", run=first["run"]["id"], include_discarded="true"))
    assert [{k: v for k, v in line.items() if k != "ref"} for line in exported] == \
        [{k: v for k, v in line.items() if k != "ref"} for line in source]
    assert exported[0]["ref"] == {"id": "<ro>", "run_id": "<run>", "run_number": 1,
                                  "url": "http://testserver/w/<ws>/runs/1/rollouts/1", "dataset": "golden-tasks",
                                  "dataset_version": 1}

    # Importing the export again reuses the dataset's tasks (no new version) and gives the same lines back.
    body = await export_text(api.client, "rollout", run=first["run"]["id"], include_discarded="true")
    second = await api.client.post("/api/v1/imports", content=body.encode())
    assert second.status_code == 201 and second.json()["dataset_version"] == 1 and second.json()["run"]["number"] == 2
    again = parse(await export_text(api.client, "rollout", run=2, include_discarded="true"))
    assert [{**line, "ref": {**line["ref"], "run_number": 1, "url": None}} for line in again] == \
        [{**line, "ref": {**line["ref"], "url": None}} for line in exported]


async def test_discarded_rollouts_are_left_out_unless_asked(api: Tenant) -> None:
    run = (await import_file(api.client, GOLDEN / "rollouts.jsonl"))["run"]["id"]
    default = parse(await export_text(api.client, "rollout", run=run))
    assert [line["attempt"] for line in default] == [1, 2, 3, 4, 5, 6, 8, 9]
    every = parse(await export_text(api.client, "rollout", run=run, include_discarded="true"))
    assert [line["attempt"] for line in every] == list(range(1, 10))


async def test_nemo_gym_import_keeps_rewards_and_items(api: Tenant) -> None:
    source = read_lines(GOLDEN / "nemo_gym_rollouts.jsonl")
    imported = await import_file(api.client, GOLDEN / "nemo_gym_rollouts.jsonl", format="nemo-gym",
                                 dataset="support-tasks")
    assert (imported["rollouts"], imported["tasks"]) == (4, 2)
    metrics = imported["metrics"]
    assert metrics["reward"]["mean"] == pytest.approx(0.5625) and metrics["reward"]["count"] == 4
    assert metrics["scores"]["accuracy"]["mean"] == 0.5

    exported = parse(await export_text(api.client, "nemo-gym", run=imported["run"]["id"]))
    assert exported == source  # the same lines: params, every output item, reward, the numeric extras

    native = parse(await export_text(api.client, "rollout", run=imported["run"]["id"]))
    assert [line["reward"] for line in native] == [1.0, 0.0, 1.0, 0.25]
    assert [line["task"]["key"] for line in native] == ["task-0", "task-0", "task-1", "task-1"]
    assert [e["kind"] for e in native[0]["events"]] == ["message", "message", "reasoning", "tool_call", "tool_result",
                                                        "message"]
    assert native[0]["events"][3]["name"] == "lookup_order"
    sft = parse(await export_text(api.client, "openai-sft", run=imported["run"]["id"]))
    assert sft[0]["messages"][2]["tool_calls"][0]["function"] == {"name": "lookup_order",
                                                                  "arguments": '{"order_id": "A17"}'}
    assert sft[0]["tools"][0]["function"]["name"] == "lookup_order"


async def test_import_errors_name_the_line(api: Tenant) -> None:
    bad = b'{"schema": "rollout.v1", "status": "succeeded", "events": []}\nnot json\n'
    response = await api.client.post("/api/v1/imports", content=bad)
    assert response.status_code == 422 and response.json()["errors"][0]["field"] == "line.2"
    response = await api.client.post("/api/v1/imports", content=b'{"responses_create_params": {}}\n')
    assert response.status_code == 422 and response.json()["errors"][0]["field"] == "line.1.schema"
    response = await api.client.post("/api/v1/imports", params={"format": "nemo-gym"},
                                     content=b'{"responses_create_params": {"input": "hi"}}\n')
    assert response.status_code == 422 and "response" in response.json()["detail"]
    line = read_lines(GOLDEN / "rollouts.jsonl")[3]
    line["events"][2].pop("name")
    response = await api.client.post("/api/v1/imports", content=json.dumps(line).encode())
    assert response.status_code == 422 and response.json()["errors"][0]["field"] == "line.1.events.2"
    assert (await api.client.get("/api/v1/runs")).json()["items"] == []  # nothing half-imported
