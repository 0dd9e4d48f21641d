"""Shared by the export tests: importing the golden source files and reading exports back."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx

GOLDEN = Path(__file__).parent / "golden"
_ID = re.compile(r"(ro|run|ws|task|ds|score|job)_[0-9a-z]{26}(?![0-9a-z])")


async def import_file(client: httpx.AsyncClient, path: Path, **params: Any) -> dict[str, Any]:
    response = await client.post("/api/v1/imports", params=params, content=path.read_bytes(),
                                 headers={"content-type": "application/x-ndjson"})
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


async def export_text(client: httpx.AsyncClient, fmt: str, **params: Any) -> str:
    response = await client.get(f"/api/v1/exports/{fmt}", params=params)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/x-ndjson")
    return response.text


def parse(text: str) -> list[dict[str, Any]]:
    """Lines as objects, with server-made IDs replaced by their prefix (they differ on every import)."""
    return [json.loads(_ID.sub(lambda m: f"<{m.group(1)}>", line)) for line in text.splitlines() if line.strip()]


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
