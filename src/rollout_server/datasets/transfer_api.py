"""REST routes for datasets as artifacts: version diffs, imports and exports in three formats, promotion."""

from __future__ import annotations

import tempfile
from typing import Any

from fastapi import Query, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from ..api.deps import Ctx, CurrentCaller, ReadSession, WriteSession
from ..api.routing import api_router
from ..common.pagination import DEFAULT_LIMIT, MAX_LIMIT
from ..common.schemas import INT32_MAX
from ..errors import NotFound, PayloadTooLarge
from ..ids import has_prefix
from ..rollouts.service import get_rollout
from . import service
from .archive import ArchiveLimits
from .diff import version_diff
from .formats import JSONL_MEDIA_TYPE, ZIP_MEDIA_TYPE, DatasetFormat, export_dataset, import_dataset
from .promotion import promote_rollout, promote_run
from .schemas import DatasetImportResult, DiffPage, PromoteResult, PromoteRollout, PromoteRun

router = api_router(tags=["datasets"])


@router.get("/datasets/{dataset}/diff", response_model=DiffPage)
def diff_versions(
    dataset: str, caller: CurrentCaller, session: ReadSession,
    from_version: int | None = Query(None, alias="from", ge=0, le=INT32_MAX,
                                     description="Default: the version before `to`; 0 is the empty dataset."),
    to_version: int | None = Query(None, alias="to", ge=1, le=INT32_MAX, description="Default: latest."),
    cursor: str | None = None, limit: int = Query(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT),
) -> DiffPage:
    """Tasks added, removed and changed (with the changed fields) between two versions, by key."""
    found = service.resolve_dataset(session, caller.workspace_id, dataset)
    return version_diff(session, found, from_version, to_version, cursor=cursor, limit=limit)


_EXPORT_DOC: dict[str, Any] = {"responses": {200: {
    "description": "A zip (jsonl: tasks.jsonl + files/; harbor: dataset.toml + task folders) or NeMo Gym JSONL.",
    "content": {ZIP_MEDIA_TYPE: {"schema": {"type": "string", "format": "binary"}},
                JSONL_MEDIA_TYPE: {"schema": {"type": "string"}}}}}}


@router.get("/datasets/{dataset}/export", response_class=StreamingResponse, openapi_extra=_EXPORT_DOC)
def export(dataset: str, caller: CurrentCaller, session: ReadSession, ctx: Ctx, format: DatasetFormat = "jsonl",
           version: int | None = Query(None, ge=1, le=INT32_MAX, description="Default: latest.")) -> StreamingResponse:
    """Stream a version of the dataset (tasks and file bytes) in a format that `import` reads back."""
    found = service.resolve_dataset(session, caller.workspace_id, dataset)
    number = service.resolve_version(session, found, version)
    body = export_dataset(ctx, caller.workspace_id, found.id, found.name, found.description, number, format)
    zipped = format != "nemo-gym"
    filename = f"{found.name}-v{number}.{'zip' if zipped else 'jsonl'}".replace('"', "")
    return StreamingResponse(body, media_type=ZIP_MEDIA_TYPE if zipped else JSONL_MEDIA_TYPE,
                             headers={"content-disposition": f'attachment; filename="{filename}"'})


_IMPORT_DOC: dict[str, Any] = {"requestBody": {"required": True, "content": {
    ZIP_MEDIA_TYPE: {"schema": {"type": "string", "format": "binary"}},
    JSONL_MEDIA_TYPE: {"schema": {"type": "string"}}},
    "description": "A zip as `export` writes it, or plain JSONL (jsonl, nemo-gym) naming uploaded files."}}


@router.post("/datasets/{dataset}/import", response_model=DatasetImportResult, status_code=201,
             openapi_extra=_IMPORT_DOC)
async def import_tasks(
    dataset: str, request: Request, caller: CurrentCaller, ctx: Ctx, format: DatasetFormat = "jsonl",
    create: bool = Query(False, description="Create the dataset (named by the path) when it does not exist."),
    replace: bool = Query(True, description="Remove the tasks the import does not hold (false: merge)."),
    message: str | None = None,
) -> DatasetImportResult:
    """Import tasks and files as one new version (none when nothing changed); streamed, checked archives."""
    if not create or has_prefix(dataset, "ds"):
        def exists() -> None:
            with ctx.db.reading() as session:
                service.resolve_dataset(session, caller.workspace_id, dataset)
        try:
            await run_in_threadpool(exists)
        except NotFound as error:
            raise NotFound(error.detail + " Pass ?create=true to create it from the import.") from error
    limit = ctx.settings.max_upload_bytes
    spool = tempfile.TemporaryFile()  # noqa: SIM115 - a zip needs random access, and may be large: on disk
    try:
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise PayloadTooLarge(f"The import is larger than {limit} bytes; split it into several imports.")
            await run_in_threadpool(spool.write, chunk)
        spool.seek(0)
        limits = ArchiveLimits(max_total_bytes=min(ArchiveLimits.max_total_bytes, 4 * limit))
        summary = await run_in_threadpool(import_dataset, ctx, caller.workspace_id, spool, format, dataset,
                                          create=create, replace=replace, message=message, limits=limits)
    finally:
        spool.close()
    return DatasetImportResult(**summary.__dict__)


@router.post("/rollouts/{rollout_id}/promote", response_model=PromoteResult, status_code=201)
def promote_one(rollout_id: str, body: PromoteRollout, caller: CurrentCaller, session: WriteSession) -> PromoteResult:
    """Make a task of a rollout (its task or ad-hoc input, optionally its output as expected) in a new version."""
    rollout = get_rollout(session, caller.workspace_id, rollout_id)
    return promote_rollout(session, caller.workspace_id, rollout, body)


@router.post("/runs/{run}/promote", response_model=PromoteResult, status_code=201)
def promote_failures(run: str, body: PromoteRun, caller: CurrentCaller, session: WriteSession) -> PromoteResult:
    """Promote every failed (or below-threshold) task of a run into a dataset, in one new version."""
    return promote_run(session, caller.workspace_id, run, body)
