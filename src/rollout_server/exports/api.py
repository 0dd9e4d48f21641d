"""REST routes for exports (streamed to the client, or written to S3 by a worker) and imports."""

from __future__ import annotations

import tempfile
from typing import Any, Literal

from fastapi import Query, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from ..api.deps import Ctx, CurrentCaller, ReadSession, WriteSession
from ..api.routing import api_router
from ..common.schemas import UTCTime
from ..errors import NotFound, PayloadTooLarge
from ..runs.schemas import RunRef
from ..scoring.service import run_metrics
from . import service
from .imports import import_jsonl
from .jobs import enqueue_export, export_job_out
from .schemas import ExportFilter, ExportFormat, ExportJobIn, ExportJobOut, ExportOptions, ImportFormat, ImportResult

router = api_router(tags=["exports"])

_STREAM_DOC: dict[str, Any] = {
    "responses": {
        200: {
            "description": "One line per rollout (per pair, per group for the DPO and GRPO formats), streamed.",
            "content": {
                service.JSONL_MEDIA_TYPE: {"schema": {"type": "string"}},
                service.PARQUET_MEDIA_TYPE: {"schema": {"type": "string", "format": "binary"}},
            },
        }
    }
}


@router.get("/exports/{format}", response_class=StreamingResponse, openapi_extra=_STREAM_DOC)
def export(
    format: ExportFormat,
    caller: CurrentCaller,
    session: ReadSession,
    ctx: Ctx,
    file_format: Literal["jsonl", "parquet"] = "jsonl",
    run: list[str] | None = Query(None, description="Run IDs or numbers (repeat for several)."),
    dataset: str | None = Query(None, description="Dataset name or ID."),
    split: str | None = None,
    status: list[Literal["running", "succeeded", "failed", "errored", "cancelled"]] | None = Query(None),
    score_name: str | None = None,
    score_min: float | None = None,
    score_max: float | None = None,
    reward_min: float | None = None,
    reward_max: float | None = None,
    started_after: UTCTime | None = None,
    started_before: UTCTime | None = None,
    tag: list[str] | None = Query(None, description="Runs carrying all these tags."),
    step: int | None = None,
    include_discarded: bool = False,
    limit: int | None = Query(None, ge=1),
    margin: float = Query(0.1, ge=0, description="DPO formats: minimum reward difference of a pair."),
    pairs: Literal["all", "best_worst"] = "all",
    style: Literal["messages", "prompt_completion"] = Query("messages", description="trl-sft line shape."),
    group_by: Literal["auto", "task", "group_key"] = "auto",
) -> StreamingResponse:
    """Stream the selected rollouts in a trainer format, as JSONL (`application/x-ndjson`) or Parquet."""
    selection = ExportFilter(runs=run, dataset=dataset, split=split, status=status, score_name=score_name,
                             score_min=score_min, score_max=score_max, reward_min=reward_min, reward_max=reward_max,
                             started_after=started_after, started_before=started_before, tags=tag, step=step,
                             include_discarded=include_discarded, limit=limit)
    filters = service.prepare(session, caller.workspace_id, selection)
    options = ExportOptions(margin=margin, pairs=pairs, style=style, group_by=group_by)
    media_type = service.PARQUET_MEDIA_TYPE if file_format == "parquet" else service.JSONL_MEDIA_TYPE
    body = service.export_bytes(ctx, caller.workspace_id, format, file_format, filters, options)
    return StreamingResponse(body, media_type=media_type, headers={
        "content-disposition": f'attachment; filename="{service.filename(format, file_format)}"'})


@router.post("/exports", response_model=ExportJobOut, status_code=202)
def create_export_job(body: ExportJobIn, caller: CurrentCaller, session: WriteSession, ctx: Ctx) -> ExportJobOut:
    """Write an export to an S3 destination in the background (the server's credentials); poll its job."""
    return export_job_out(enqueue_export(session, caller.workspace_id, body, ctx.settings.scoring_max_attempts))


@router.get("/exports/jobs/{job_id}", response_model=ExportJobOut)
def get_export_job(job_id: str, caller: CurrentCaller, session: ReadSession) -> ExportJobOut:
    """An S3 export's progress and outcome."""
    from ..scoring.repository import JobRepository

    job = JobRepository(session).get(caller.workspace_id, job_id)
    if job is None or job.kind != "export":
        raise NotFound(f"No export job {job_id} in this workspace.")
    return export_job_out(job)


_IMPORT_DOC: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {service.JSONL_MEDIA_TYPE: {"schema": {"type": "string"}}},
        "description": "JSONL: native `rollout.v1` lines, or NeMo Gym rollout lines with format=nemo-gym.",
    }
}


@router.post("/imports", response_model=ImportResult, status_code=201, openapi_extra=_IMPORT_DOC)
async def import_rollouts(
    request: Request,
    caller: CurrentCaller,
    ctx: Ctx,
    format: ImportFormat = "rollout",
    dataset: str | None = Query(None, description="Dataset for the tasks (default: the export's, else 'imported')."),
    workflow_name: str | None = None,
) -> ImportResult:
    """Import JSONL into a new run, with its tasks, traces, scores and rewards; answers with the run's metrics."""
    limit = ctx.settings.max_upload_bytes
    spool = tempfile.SpooledTemporaryFile(max_size=8 * 1024 * 1024)  # noqa: SIM115
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise PayloadTooLarge(f"The import is larger than {limit} bytes; split it into several files.")
            await run_in_threadpool(spool.write, chunk)

        def run_import() -> ImportResult:
            with ctx.db.transaction() as session:
                outcome = import_jsonl(session, ctx.store, caller.workspace_id, spool, fmt=format, dataset=dataset,
                                       workflow_name=workflow_name, inline_limit=ctx.settings.inline_payload_bytes)
                metrics = run_metrics(session, caller.workspace_id, outcome.run.id, include_discarded=True)
                return ImportResult(run=RunRef(id=outcome.run.id, number=outcome.run.number), dataset=outcome.dataset,
                                    dataset_version=outcome.dataset_version, rollouts=outcome.rollouts,
                                    events=outcome.events, scores=outcome.scores, tasks=outcome.tasks,
                                    missing_files=outcome.missing_files, metrics=metrics)

        return await run_in_threadpool(run_import)
    finally:
        spool.close()
