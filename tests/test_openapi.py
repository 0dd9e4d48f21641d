"""The committed OpenAPI document is the contract the SDKs are generated from: it must not drift."""

from __future__ import annotations

from pathlib import Path

from rollout_server.openapi import render

COMMITTED = Path(__file__).resolve().parents[1] / "docs" / "openapi.json"


def test_committed_openapi_matches_the_app() -> None:
    assert COMMITTED.read_text() == render(), "docs/openapi.json is stale: run `make openapi` and commit it"
