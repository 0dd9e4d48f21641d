"""Business rules for exports: resolve the filter, read records page by page, shape them into the format's
lines, and encode them as JSONL or Parquet — a generator of bytes whatever the size of the export."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
from sqlalchemy.orm import Session

from ..context import AppContext
from .formats import GROUP_FORMATS, line_maker
from .parquet import parquet_stream
from .schemas import ExportFilter, ExportOptions
from .source import RecordReader, resolve_filter

JSONL_MEDIA_TYPE = "application/x-ndjson"
PARQUET_MEDIA_TYPE = "application/vnd.apache.parquet"
_OPTIONS = orjson.OPT_UTC_Z | orjson.OPT_NON_STR_KEYS | orjson.OPT_APPEND_NEWLINE
CHUNK = 256 * 1024


def prepare(session: Session, workspace_id: str, f: ExportFilter) -> dict[str, Any]:
    """Validate and resolve the filter before the response starts, so a bad filter is a 4xx, not a cut stream."""
    return resolve_filter(session, workspace_id, f)


def lines(ctx: AppContext, workspace_id: str, fmt: str, filters: dict[str, Any],
          options: ExportOptions) -> Iterator[dict[str, Any]]:
    reader = RecordReader(ctx, workspace_id, filters, group_by=options.group_by if fmt in GROUP_FORMATS else None,
                          raw_events=fmt == "rollout")
    return line_maker(fmt, options)(reader)


def jsonl_stream(source: Iterator[dict[str, Any]]) -> Iterator[bytes]:
    buffer: list[bytes] = []
    size = 0
    for line in source:
        encoded = orjson.dumps(line, option=_OPTIONS)
        buffer.append(encoded)
        size += len(encoded)
        if size >= CHUNK:
            yield b"".join(buffer)
            buffer, size = [], 0
    if buffer:
        yield b"".join(buffer)


def export_bytes(ctx: AppContext, workspace_id: str, fmt: str, file_format: str, filters: dict[str, Any],
                 options: ExportOptions) -> Iterator[bytes]:
    source = lines(ctx, workspace_id, fmt, filters, options)
    if file_format == "parquet":
        return parquet_stream(fmt, source)
    return jsonl_stream(source)


def filename(fmt: str, file_format: str) -> str:
    return f"{fmt}.{'parquet' if file_format == 'parquet' else 'jsonl'}"
