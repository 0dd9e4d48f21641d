"""Export mechanics: Parquet mirrors JSONL for every format, keyset paging gives the same lines whatever the
page size (groups that straddle pages included), filters narrow the selection, and S3 exports run as jobs."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from rollout_server.context import AppContext
from rollout_server.exports import source
from rollout_server.exports.parquet import COLUMNS
from rollout_server.scoring.worker import Worker
from tests.conftest import Tenant
from tests.exports.helpers import GOLDEN, export_text, import_file, parse
from tests.support.s3 import S3Server

FORMATS = ["rollout", "nemo-gym", "openai-sft", "trl-sft", "openai-dpo", "trl-dpo", "grpo"]


def _from_parquet(fmt: str, data: bytes) -> list[dict[str, Any]]:
    table = pq.read_table(io.BytesIO(data))
    kinds = dict(COLUMNS[fmt])
    rows = []
    for row in table.to_pylist():
        line: dict[str, Any] = {}
        for name, value in row.items():
            if name == "extra":
                line.update(json.loads(value) if value else {})
            elif value is not None or name in ("reward",):
                line[name] = json.loads(value) if kinds.get(name) == "json" else value
        rows.append(line)
    return rows


@pytest.mark.parametrize("fmt", FORMATS)
async def test_parquet_holds_the_same_lines(api: Tenant, fmt: str) -> None:
    run = (await import_file(api.client, GOLDEN / "rollouts.jsonl"))["run"]["id"]
    lines = [{k: v for k, v in line.items() if v is not None}
             for line in json.loads("[" + ",".join((await export_text(api.client, fmt, run=run)).splitlines()) + "]")]
    response = await api.client.get(f"/api/v1/exports/{fmt}", params={"run": run, "file_format": "parquet"})
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/vnd.apache.parquet"
    rows = [{k: v for k, v in row.items() if v is not None} for row in _from_parquet(fmt, response.content)]
    assert rows == lines


async def test_paging_does_not_change_the_output(api: Tenant, monkeypatch: pytest.MonkeyPatch) -> None:
    await import_file(api.client, GOLDEN / "rollouts.jsonl")
    await import_file(api.client, GOLDEN / "nemo_gym_rollouts.jsonl", format="nemo-gym")
    whole = {fmt: await export_text(api.client, fmt) for fmt in FORMATS}
    monkeypatch.setattr(source.RecordReader, "page_size", 2)
    for fmt in FORMATS:
        assert parse(await export_text(api.client, fmt)) == parse(whole[fmt]), fmt
    assert len(parse(whole["rollout"])) == 12  # both runs, discarded attempt 7 left out
    assert len(parse(await export_text(api.client, "rollout", limit=5))) == 5


async def test_filters(api: Tenant) -> None:
    run = (await import_file(api.client, GOLDEN / "rollouts.jsonl"))["run"]
    await import_file(api.client, GOLDEN / "nemo_gym_rollouts.jsonl", format="nemo-gym", dataset="support")

    async def attempts(**params: Any) -> list[int]:
        return [line["attempt"] for line in parse(await export_text(api.client, "rollout", **params))]

    assert await attempts(run=run["number"]) == [1, 2, 3, 4, 5, 6, 8, 9]
    assert await attempts(run=run["number"], status=["errored", "failed"]) == [8]
    assert await attempts(run=run["number"], split="test") == [6, 8]
    assert await attempts(run=run["number"], reward_min=0.5) == [1, 3, 4, 6]
    assert await attempts(run=run["number"], reward_min=0.1, reward_max=0.9) == [3]
    assert await attempts(run=run["number"], score_name="judge", score_min=0.5) == [1, 3]
    assert await attempts(run=run["number"], step=3) == [9]
    assert await attempts(dataset="golden-tasks") == [1, 2, 3, 4, 5, 6, 8, 9]
    assert await attempts(dataset="support") == [1, 2, 3, 4]
    assert await attempts(tag="golden") == [1, 2, 3, 4, 5, 6, 8, 9]
    assert await attempts(started_after="2026-11-20T10:04:00Z", started_before="2026-11-20T10:06:00Z",
                          run=run["id"]) == [4, 5]
    assert await attempts(run=[str(run["number"]), "2"], reward_min=1) == [1, 4, 6, 1, 3]
    response = await api.client.get("/api/v1/exports/rollout", params={"run": 99})
    assert response.status_code == 404
    response = await api.client.get("/api/v1/exports/rollout", params={"score_min": 1})
    assert response.status_code == 422 and response.json()["errors"][0]["field"] == "score_name"
    response = await api.client.get("/api/v1/exports/nope")
    assert response.status_code == 422


async def test_dpo_margin_and_pairing(api: Tenant) -> None:
    run = (await import_file(api.client, GOLDEN / "rollouts.jsonl"))["run"]["id"]
    wide = parse(await export_text(api.client, "trl-dpo", run=run, margin=0.6))
    assert [(line["score_chosen"], line["score_rejected"]) for line in wide] == [(1.0, 0.0), (1.0, 0.0)]
    best = parse(await export_text(api.client, "trl-dpo", run=run, pairs="best_worst"))
    assert [(line["score_chosen"], line["score_rejected"]) for line in best] == [(1.0, 0.0), (1.0, 0.0)]


@pytest.mark.s3
async def test_export_to_s3_runs_as_a_job(api: Tenant, ctx: AppContext, s3_server: S3Server, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in s3_server.env().items():
        monkeypatch.setenv(name, value)
    ctx.settings.s3_endpoint_url = s3_server.endpoint_url
    ctx.settings.s3_region = "us-east-1"
    bucket = s3_server.create_bucket(f"exports-{tmp_path.name[-8:].lower().replace('_', '-')}")
    run = (await import_file(api.client, GOLDEN / "rollouts.jsonl"))["run"]["id"]
    response = await api.client.post("/api/v1/exports", json={
        "format": "openai-sft", "destination": f"s3://{bucket}/sft/train.jsonl", "filter": {"runs": [run]}})
    assert response.status_code == 202, response.text
    job = response.json()
    assert job["status"] == "queued"
    Worker(ctx, worker_id="exporter").drain()
    done = (await api.client.get(f"/api/v1/exports/jobs/{job['id']}")).json()
    assert done["status"] == "done" and done["lines"] == 7, done
    stored = s3_server.client().get_object(Bucket=bucket, Key="sft/train.jsonl")["Body"].read().decode()
    assert stored == await export_text(api.client, "openai-sft", run=run)
    assert done["bytes"] == len(stored.encode())

    response = await api.client.post("/api/v1/exports", json={"format": "grpo", "destination": "s3://no-such-bucket/x",
                                                                "filter": {"runs": [run]}})
    failed_id = response.json()["id"]
    ctx.settings.scoring_retry_seconds = 0.0
    Worker(ctx, worker_id="exporter").drain()
    failed = (await api.client.get(f"/api/v1/exports/jobs/{failed_id}")).json()
    assert failed["status"] == "failed" and "NoSuchBucket" in failed["error"]
    response = await api.client.post("/api/v1/exports", json={"format": "grpo", "destination": "/tmp/x"})
    assert response.status_code == 422


async def test_group_walk_reads_the_group_index_not_a_sort(api: Tenant, ctx: AppContext) -> None:
    """GRPO and DPO exports walk a run in (run, step, group, attempt) order, one keyset page at a time. Each
    page must come off ix_rollouts_run_group: a sort would re-read the whole run for every page."""
    from sqlalchemy import text

    from rollout_server.exports.repository import ExportRepository

    await import_file(api.client, GOLDEN / "rollouts.jsonl")
    with ctx.db.reading() as session:
        repo = ExportRepository(session)
        where = repo.conditions(api.workspace_id, {})
        query = repo.page_query(where, after=("run_0", 0, "g", 1), limit=500, group_by="auto")
        compiled = query.compile(session.get_bind(), compile_kwargs={"literal_binds": True})
        if ctx.db.dialect == "postgresql":
            session.execute(text("SET LOCAL enable_sort = off"))  # the tables are tiny: ask what is possible
            plan = "\n".join(row[0] for row in session.execute(text(f"EXPLAIN {compiled}")))
            assert "ix_rollouts_run_group" in plan and "Sort" not in plan, plan
        else:
            plan = "\n".join(row[-1] for row in session.execute(text(f"EXPLAIN QUERY PLAN {compiled}")))
            assert "ix_rollouts_run_group" in plan and "TEMP B-TREE" not in plan, plan
