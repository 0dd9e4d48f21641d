"""Exports to S3 as background jobs: the worker streams the export into a multipart upload (5 MiB parts), so
the file never sits whole in memory or on disk; the job row keeps the outcome."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

from sqlalchemy.orm import Session

from ..context import AppContext
from ..db.types import utcnow
from ..ids import new_id
from ..models import Job
from ..scoring.repository import JobRepository
from .schemas import ExportJobIn, ExportJobOut
from .service import export_bytes, prepare

PART = 8 * 1024 * 1024


def enqueue_export(session: Session, workspace_id: str, body: ExportJobIn, max_attempts: int) -> Job:
    prepare(session, workspace_id, body.filter)  # a bad filter is refused now, not in the worker
    now = utcnow()
    job = Job(id=new_id("job"), workspace_id=workspace_id, kind="export", payload=body.model_dump(mode="json"),
              status="queued", attempts=0, max_attempts=max_attempts, run_after=now, created_at=now)
    JobRepository(session).add_many([job])
    return job


def export_job_out(job: Job) -> ExportJobOut:
    payload = job.payload or {}
    result = job.result or {}
    return ExportJobOut(id=job.id, status=job.status, format=payload.get("format", ""),
                        file_format=payload.get("file_format", "jsonl"), destination=payload.get("destination", ""),
                        attempts=job.attempts, error=job.last_error, lines=result.get("lines"),
                        bytes=result.get("bytes"), created_at=job.created_at, finished_at=job.finished_at)


def _s3_client(ctx: AppContext) -> Any:
    import boto3

    return boto3.client("s3", endpoint_url=ctx.settings.s3_endpoint_url, region_name=ctx.settings.s3_region)


def upload_stream(client: Any, bucket: str, key: str, chunks: Iterator[bytes], content_type: str) -> int:
    """Multipart upload of a byte stream; aborted (nothing left behind) if the stream fails."""
    upload = client.create_multipart_upload(Bucket=bucket, Key=key, ContentType=content_type)
    parts: list[dict[str, Any]] = []
    buffer = bytearray()
    total = 0

    def send(data: bytes) -> None:
        number = len(parts) + 1
        answer = client.upload_part(Bucket=bucket, Key=key, UploadId=upload["UploadId"], PartNumber=number, Body=data)
        parts.append({"ETag": answer["ETag"], "PartNumber": number})

    try:
        for chunk in chunks:
            buffer += chunk
            total += len(chunk)
            if len(buffer) >= PART:
                send(bytes(buffer))
                buffer.clear()
        if buffer or not parts:
            send(bytes(buffer))
        client.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=upload["UploadId"],
                                         MultipartUpload={"Parts": parts})
    except BaseException:
        client.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=upload["UploadId"])
        raise
    return total


def process_export_job(ctx: AppContext, job_id: str, worker_id: str) -> str:
    with ctx.db.reading() as session:
        job = session.get(Job, job_id)
        if job is None:
            return "lost"
        spec = ExportJobIn.model_validate(job.payload)
        workspace_id = job.workspace_id
        filters = prepare(session, workspace_id, spec.filter)
    bucket, _, key = spec.destination[len("s3://"):].partition("/")
    lines = 0

    def counted(chunks: Iterator[bytes]) -> Iterator[bytes]:
        nonlocal lines
        for chunk in chunks:
            if spec.file_format == "jsonl":
                lines += chunk.count(b"\n")
            yield chunk

    error = None
    size = 0
    try:
        data = export_bytes(ctx, workspace_id, spec.format, spec.file_format, filters,
                            spec.options)
        content_type = "application/vnd.apache.parquet" if spec.file_format == "parquet" else "application/x-ndjson"
        size = upload_stream(_s3_client(ctx), bucket, key, counted(data), content_type)
    except Exception as failure:  # the destination refused, credentials missing...: keep the reason on the job
        error = f"{failure.__class__.__name__}: {failure}"[:2000]
    with ctx.db.transaction() as session:
        owned = JobRepository(session).lock_owned(job_id, worker_id)
        if owned is None:
            return "lost"
        owned.locked_until = None
        owned.last_error = error
        if error and owned.attempts < owned.max_attempts:
            owned.status = "queued"
            delay = ctx.settings.scoring_retry_seconds * 2 ** (owned.attempts - 1)
            owned.run_after = utcnow() + timedelta(seconds=delay)
            return owned.status
        owned.status = "failed" if error else "done"
        owned.finished_at = utcnow()
        owned.result = None if error else {"bytes": size, "lines": lines if spec.file_format == "jsonl" else None,
                                           "uri": spec.destination}
        return owned.status
