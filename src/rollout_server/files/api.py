"""REST routes for files: upload (multipart or a raw streamed body), metadata, download."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from fastapi import Query, Request
from fastapi.responses import RedirectResponse, StreamingResponse
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from ..api.deps import Ctx, CurrentCaller, ReadSession, WriteSession
from ..api.routing import api_router
from ..errors import InvalidInput, PayloadTooLarge
from ..storage.base import CHUNK, StoredBlob, blob_key, ingest_async_stream, ingest_file
from . import service
from .bucket import FileReader, add_from_bucket
from .schemas import FileFromBucket, FileOut, FileUrl

router = api_router(tags=["files"])

_UPLOAD_DOC: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["file"],
                    "properties": {"file": {"type": "string", "format": "binary"}},
                }
            },
            "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
        },
    },
    "parameters": [
        {
            "name": "name",
            "in": "query",
            "required": False,
            "schema": {"type": "string"},
            "description": "File name for a raw body upload (multipart uses its filename).",
        }
    ],
}


def content_disposition(name: str) -> str:
    ascii_name = name.encode("ascii", "ignore").decode().replace('"', "").replace("\\", "") or "download"
    return f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(name)}"


@router.post("/files", response_model=FileOut, status_code=201, openapi_extra=_UPLOAD_DOC)
async def upload_file(request: Request, caller: CurrentCaller, ctx: Ctx) -> FileOut:
    """Upload a file as multipart (field `file`) or as the raw body with `?name=`; bytes are streamed."""
    limit = ctx.settings.max_upload_bytes
    content_type = request.headers.get("content-type", "")
    blob: StoredBlob
    try:
        if content_type.startswith("multipart/form-data"):
            form = await request.form(max_files=1, max_fields=10)
            upload = form.get("file")
            if not isinstance(upload, UploadFile):
                raise InvalidInput("The multipart body needs a part named 'file' holding the bytes.", field="file")
            name = service.clean_file_name(request.query_params.get("name") or upload.filename)
            media_type = service.guess_media_type(name, upload.content_type)
            try:
                blob = await run_in_threadpool(
                    ingest_file, ctx.store, caller.workspace_id, upload.file, max_bytes=limit
                )
            finally:
                await form.close()
        else:
            name = service.clean_file_name(request.query_params.get("name"))
            media_type = service.guess_media_type(name, content_type)
            blob = await ingest_async_stream(ctx.store, caller.workspace_id, request.stream(), max_bytes=limit)
    except ValueError as error:
        raise PayloadTooLarge(f"The file is too large: {error}.") from error

    def record() -> FileOut:
        with ctx.db.transaction() as session:
            return service.to_out(service.record_upload(session, caller.workspace_id, blob, name, media_type))

    return await run_in_threadpool(record)


@router.get("/files/{file_id}", response_model=FileOut)
def get_file(file_id: str, caller: CurrentCaller, session: ReadSession) -> FileOut:
    """A file's name, media type, size and SHA-256."""
    return service.to_out(service.get_file(session, caller.workspace_id, file_id))


@router.get(
    "/files/{file_id}/content",
    responses={200: {"content": {"application/octet-stream": {}}}, 307: {"description": "Redirect to a presigned URL"}},
    response_model=None,
)
def download_file(
    file_id: str,
    caller: CurrentCaller,
    session: ReadSession,
    ctx: Ctx,
    redirect: bool = Query(False, description="Redirect to a presigned store URL when the store has them."),
) -> StreamingResponse | RedirectResponse:
    """Download a file's bytes (streamed)."""
    file = service.get_file(session, caller.workspace_id, file_id)
    key = blob_key(caller.workspace_id, file.sha256)
    if redirect and file.external_key is None:
        url = ctx.store.presigned_url(key, filename=file.name, media_type=file.media_type)
        if url:
            return RedirectResponse(url, status_code=307)
    return StreamingResponse(
        ctx.store.iter_bytes(key, CHUNK) if file.external_key is None
        else FileReader(ctx, caller.workspace_id).chunks(file),
        media_type=file.media_type,
        headers={
            "content-length": str(file.size),
            "content-disposition": content_disposition(file.name),
            "x-content-sha256": file.sha256,
            "x-content-type-options": "nosniff",
        },
    )


@router.get("/files/{file_id}/url", response_model=FileUrl)
def file_url(file_id: str, caller: CurrentCaller, session: ReadSession, ctx: Ctx) -> FileUrl:
    """A direct download URL: presigned on S3, the API path otherwise."""
    file = service.get_file(session, caller.workspace_id, file_id)
    url = ctx.store.presigned_url(
        blob_key(caller.workspace_id, file.sha256), filename=file.name, media_type=file.media_type
    ) if file.external_key is None else None
    if url:
        return FileUrl(url=url, expires_in=3600)
    return FileUrl(url=f"{ctx.settings.base_url}/api/v1/files/{file.id}/content", expires_in=None)


@router.post("/files/from-bucket", response_model=FileOut, status_code=201)
def file_from_bucket(body: FileFromBucket, caller: CurrentCaller, session: WriteSession, ctx: Ctx) -> FileOut:
    """A file from the workspace's connected bucket: referenced in place (no copy) or imported into the store."""
    return service.to_out(add_from_bucket(ctx, session, caller.workspace_id, body.key, body.name, body.mode))
