"""The blob-store interface and the content-addressing that both implementations share."""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Protocol

CHUNK = 1024 * 1024
# Uploads are spooled to disk past this size, so a large file never sits whole in memory.
SPOOL_MEMORY = 8 * 1024 * 1024


def blob_key(workspace_id: str, sha256: str) -> str:
    return f"{workspace_id}/sha256/{sha256[:2]}/{sha256}"


@dataclass(frozen=True)
class StoredBlob:
    sha256: str
    size: int


class BlobStore(Protocol):
    name: str

    def exists(self, key: str) -> bool: ...

    def put(self, key: str, source: IO[bytes], size: int) -> None:
        """Store `size` bytes read from `source` (positioned at 0) under `key`."""

    def iter_bytes(self, key: str, chunk_size: int = CHUNK) -> Iterator[bytes]: ...

    def delete(self, key: str) -> None: ...

    def presigned_url(self, key: str, *, filename: str, media_type: str, expires_in: int = 3600) -> str | None:
        """A time-limited direct download URL, or None where the store cannot make one."""

    def check(self) -> None:
        """Raise if the store cannot be read and written."""


class _Spool:
    """Hashes bytes while spooling them to a temporary file."""

    def __init__(self) -> None:
        self.file: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=SPOOL_MEMORY)  # noqa: SIM115
        self.digest = hashlib.sha256()
        self.size = 0

    def write(self, chunk: bytes, max_bytes: int | None) -> None:
        self.size += len(chunk)
        if max_bytes is not None and self.size > max_bytes:
            self.file.close()
            raise ValueError(f"file exceeds the limit of {max_bytes} bytes")
        self.digest.update(chunk)
        self.file.write(chunk)

    def finish(self, store: BlobStore, workspace_id: str) -> StoredBlob:
        sha = self.digest.hexdigest()
        key = blob_key(workspace_id, sha)
        try:
            if not store.exists(key):
                self.file.seek(0)
                store.put(key, self.file, self.size)
        finally:
            self.file.close()
        return StoredBlob(sha256=sha, size=self.size)


def ingest_stream(
    store: BlobStore, workspace_id: str, chunks: Iterable[bytes], *, max_bytes: int | None = None
) -> StoredBlob:
    """Store a byte stream by its SHA-256 in the workspace; identical bytes are stored once."""
    spool = _Spool()
    for chunk in chunks:
        spool.write(chunk, max_bytes)
    return spool.finish(store, workspace_id)


async def ingest_async_stream(
    store: BlobStore, workspace_id: str, chunks: AsyncIterator[bytes], *, max_bytes: int | None = None
) -> StoredBlob:
    from starlette.concurrency import run_in_threadpool

    spool = _Spool()
    async for chunk in chunks:
        if chunk:
            spool.write(chunk, max_bytes)
    return await run_in_threadpool(spool.finish, store, workspace_id)


def ingest_file(store: BlobStore, workspace_id: str, source: IO[bytes], *, max_bytes: int | None = None) -> StoredBlob:
    return ingest_stream(store, workspace_id, iter(lambda: source.read(CHUNK), b""), max_bytes=max_bytes)
