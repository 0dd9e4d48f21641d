"""Turn `ROLLOUT_STORAGE_URL` into a blob store."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlparse

from .base import BlobStore
from .local import LocalBlobStore
from .s3 import S3BlobStore


def open_blob_store(url: str, *, s3_endpoint_url: str | None = None, s3_region: str | None = None) -> BlobStore:
    parsed = urlparse(url)
    if parsed.scheme == "file" and parsed.netloc not in ("", "localhost"):
        raise ValueError(
            f"storage URL {url!r} has a host part ({parsed.netloc!r}); use file:///absolute/path or a plain path"
        )
    if parsed.scheme in ("", "file"):
        path = unquote(parsed.path) if parsed.scheme == "file" else url
        return LocalBlobStore(Path(path))
    if parsed.scheme == "s3":
        if not parsed.netloc:
            raise ValueError(f"storage URL {url!r} names no bucket; use s3://bucket/prefix")
        return S3BlobStore(parsed.netloc, parsed.path, endpoint_url=s3_endpoint_url, region=s3_region)
    raise ValueError(f"unsupported storage URL {url!r}: use file:///path or s3://bucket/prefix")
