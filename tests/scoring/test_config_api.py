"""Configuring scorers over the API: create, replace, list per dataset and run, delete, validation errors,
workspace isolation, and the list of available types (built-ins and entry points)."""

from __future__ import annotations

from pathlib import Path

from tests.api.factories import create_dataset, start_run
from tests.conftest import Tenant


async def test_scorer_lifecycle(api: Tenant, other: Tenant, fake_scorers_path: Path) -> None:
    dataset = await create_dataset(api.client, with_file=False)
    body = {"dataset": dataset["name"], "name": "correct", "type": "exact_match", "config": {}}
    created = await api.client.post("/api/v1/scorers", json=body)
    assert created.status_code == 201, created.text
    scorer = created.json()
    assert scorer["dataset_id"] == dataset["id"] and scorer["run_id"] is None

    replaced = await api.client.post("/api/v1/scorers", json={**body, "config": {"normalize": True}})
    assert replaced.status_code == 200 and replaced.json()["id"] == scorer["id"]
    assert replaced.json()["config"] == {"normalize": True}

    run = await start_run(api.client, dataset)
    response = await api.client.post("/api/v1/scorers", json={"run": run["id"], "name": "correct",
                                                               "type": "contains", "config": {"value": "x"}})
    assert response.status_code == 201
    await api.client.post("/api/v1/scorers", json={"run": run["id"], "name": "extra", "type": "json_valid"})
    applies = (await api.client.get("/api/v1/scorers", params={"run": run["number"]})).json()["items"]
    assert [(s["name"], s["type"]) for s in applies] == [("correct", "contains"), ("extra", "json_valid")]
    on_dataset = (await api.client.get("/api/v1/scorers", params={"dataset": dataset["id"]})).json()["items"]
    assert [s["id"] for s in on_dataset] == [scorer["id"]]

    assert (await other.client.get(f"/api/v1/scorers/{scorer['id']}")).status_code == 404
    assert (await other.client.delete(f"/api/v1/scorers/{scorer['id']}")).status_code == 404
    assert (await other.client.get("/api/v1/scorers")).json()["items"] == []
    assert (await api.client.delete(f"/api/v1/scorers/{scorer['id']}")).status_code == 204
    assert (await api.client.get(f"/api/v1/scorers/{scorer['id']}")).status_code == 404


async def test_scorer_validation_names_the_field(api: Tenant, fake_scorers_path: Path) -> None:
    dataset = await create_dataset(api.client, with_file=False)
    cases = [
        ({"type": "regex", "config": {"pattern": "(("}}, "config.pattern"),
        ({"type": "what", "config": {}}, "type"),
        ({"type": "python", "config": {"entry_point": "not_installed"}}, "config.entry_point"),
        ({"type": "weighted", "config": {"checks": [{"type": "length", "min": -1}]}}, "config.checks.0.min"),
    ]
    for extra, field in cases:
        response = await api.client.post("/api/v1/scorers", json={"dataset": dataset["id"], "name": "s", **extra})
        assert response.status_code == 422, response.text
        assert response.json()["errors"][0]["field"] == field, response.json()
    response = await api.client.post("/api/v1/scorers", json={"name": "s", "type": "json_valid"})
    assert response.status_code == 422
    response = await api.client.post("/api/v1/scorers", json={"dataset": "nope", "name": "s", "type": "json_valid"})
    assert response.status_code == 404


async def test_scorer_types_include_entry_points(api: Tenant, fake_scorers_path: Path) -> None:
    types = {t["type"]: t["source"] for t in (await api.client.get("/api/v1/scorers/types")).json()}
    for builtin in ("exact_match", "normalized_match", "contains", "not_contains", "regex", "json_path_equals",
                    "numeric_close", "json_valid", "json_keys", "json_schema", "length", "weighted", "llm_judge",
                    "webhook"):
        assert types[builtin] == "builtin"
    assert types["boom"] == "entry point fake_rollout_scorers:boom"
