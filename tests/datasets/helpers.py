"""Helpers for dataset artifact tests: a dataset with varied tasks and files, and reading tasks back."""

from __future__ import annotations

from typing import Any

import httpx

from tests.api.factories import create_dataset, upload_file

API = "/api/v1"
PDF = b"%PDF-1.4\n" + bytes(range(256)) * 40
NOTES = "notes: caf\u00e9 \u2014 \x7f\n".encode()


async def varied_dataset(client: httpx.AsyncClient, name: str) -> dict[str, Any]:
    pdf = await upload_file(client, PDF, "paper.pdf", "application/pdf")
    notes = await upload_file(client, NOTES, "notes.txt")
    test_sh = await upload_file(client, b"#!/bin/sh\nexit 0\n", "test.sh")
    tasks: list[dict[str, Any]] = [
        {"key": "a-plain", "instruction": "Summarise the paper.", "input": {"n": 1, "nested": {"x": [1, 2.5, None]}},
         "expected_output": "short", "output_schema": {"type": "string"}, "metadata": {"source": "t", "k": 3},
         "split": "train", "files": [pdf["id"], notes["id"]]},
        {"key": "b odd key?", "instruction": "", "input": None, "expected_output": {"answer": None},
         "metadata": {"none": None}, "files": [pdf["id"]]},
        {"key": "c-nemo", "instruction": "What is 2+2?",
         "input": {"responses_create_params": {"input": [{"role": "user", "content": "What is 2+2?"}],
                                               "tools": [{"type": "function", "name": "calc"}]},
                   "question_id": 7},
         "expected_output": 4, "metadata": {"harbor": {"paths": ["tests/test.sh"],
                                                       "verifier": {"timeout_sec": 120.0}}},
         "files": [test_sh["id"]]},
        {"key": "d-empty", "instruction": "multi\nline \"quoted\" \\ text"},
    ]
    return await create_dataset(client, name=name, tasks=tasks)


async def all_tasks(client: httpx.AsyncClient, dataset: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 1000, **({"cursor": cursor} if cursor else {})}
        response = await client.get(f"{API}/datasets/{dataset}/tasks", params=params)
        assert response.status_code == 200, response.text
        items.extend(response.json()["items"])
        cursor = response.json()["next_cursor"]
        if not cursor:
            return items


async def comparable(client: httpx.AsyncClient, dataset: str) -> list[dict[str, Any]]:
    """Tasks without IDs and dates, with each file as (name, sha256, bytes)."""
    out = []
    for task in await all_tasks(client, dataset):
        files = []
        for f in task["files"]:
            content = (await client.get(f"{API}/files/{f['id']}/content")).content
            files.append((f["name"], f["sha256"], content))
        out.append({k: task[k] for k in ("key", "instruction", "input", "expected_output", "output_schema",
                                         "metadata", "split")} | {"files": files})
    return out
