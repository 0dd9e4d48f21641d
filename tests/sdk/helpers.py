"""Helpers for SDK tests against a live server: clients with their own spool and cache folders."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx

import rollout


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def make_client(live: Any, tmp_path: Path, **options: Any) -> rollout.Client:
    """A client of its own: spool and file cache under the test's folder, never the user's."""
    options.setdefault("spool_dir", tmp_path / "spool")
    options.setdefault("files_cache_dir", tmp_path / "cache")
    return rollout.Client(live.base_url, live.api_key, **options)


def raw(live: Any) -> httpx.Client:
    """A plain HTTP client, to check what the server stored without going through the SDK."""
    return httpx.Client(
        base_url=live.base_url + "/api/v1",
        timeout=30,
        trust_env=False,
        headers={"authorization": f"Bearer {live.api_key}"},
    )


def all_events(http: httpx.Client, rollout_id: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 1000}
        if cursor:
            params["cursor"] = cursor
        page = http.get(f"/rollouts/{rollout_id}/events", params=params)
        page.raise_for_status()
        body = page.json()
        events.extend(body["items"])
        cursor = body.get("next_cursor")
        if not cursor:
            return events


def run_rollouts(http: httpx.Client, run_id: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"run": run_id, "limit": 1000}
        if cursor:
            params["cursor"] = cursor
        page = http.get("/rollouts", params=params)
        page.raise_for_status()
        body = page.json()
        items.extend(body["items"])
        cursor = body.get("next_cursor")
        if not cursor:
            return items
