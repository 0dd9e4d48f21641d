"""Blob store in a local folder; writes go through a temporary file and an atomic rename."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from .base import CHUNK


class LocalBlobStore:
    name = "local"

    def __init__(self, root: Path) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        path = (self.root / key).resolve()
        if self.root.resolve() not in path.parents:
            raise ValueError(f"blob key escapes the store: {key!r}")
        return path

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def put(self, key: str, source: IO[bytes], size: int) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".upload-")
        try:
            with os.fdopen(fd, "wb") as out:
                shutil.copyfileobj(source, out, CHUNK)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def iter_bytes(self, key: str, chunk_size: int = CHUNK) -> Iterator[bytes]:
        with self._path(key).open("rb") as handle:
            while chunk := handle.read(chunk_size):
                yield chunk

    def delete(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)

    def presigned_url(self, key: str, *, filename: str, media_type: str, expires_in: int = 3600) -> str | None:
        return None

    def check(self) -> None:
        probe = self.root / ".probe"
        probe.write_bytes(b"ok")
        probe.unlink()
