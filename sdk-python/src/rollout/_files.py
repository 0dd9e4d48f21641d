"""Task files: uploads for new datasets, and a local cache keyed by SHA-256 for materialize_files().

The cache layout is <cache>/<sha256[:2]>/<sha256>/<file name>: the same bytes are downloaded once per
machine whatever task or dataset refers to them, and the agent sees the original file name.
"""

from __future__ import annotations

import hashlib
import mimetypes
import os
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ._errors import RolloutError
from ._http import SyncTransport
from ._types import File

_UNSAFE = re.compile(r"[^\w.\- ()+,=@]+", re.UNICODE)


def safe_name(name: str) -> str:
    base = os.path.basename(name.replace("\\", "/")) or "file"
    cleaned = _UNSAFE.sub("_", base).strip(" .") or "file"
    return cleaned[:200]


def cache_path(cache_dir: Path, file: File) -> Path:
    digest = file.sha256.lower()
    if not re.fullmatch(r"[0-9a-f]{64}", digest):
        digest = hashlib.sha256(file.id.encode()).hexdigest()  # no hash from the server: key by id
    return cache_dir / digest[:2] / digest / safe_name(file.name or file.id)


class _HashingWriter:
    def __init__(self, handle: IO[bytes]) -> None:
        self.handle = handle
        self.hasher = hashlib.sha256()

    def write(self, data: bytes) -> int:
        self.hasher.update(data)
        return self.handle.write(data)

    def seek(self, offset: int) -> int:
        return self.handle.seek(offset)

    def truncate(self) -> int:
        self.hasher = hashlib.sha256()
        return self.handle.truncate()


def materialize(transport: SyncTransport, cache_dir: Path, files: Sequence[File]) -> list[Path]:
    """Local paths of `files` in order, downloading only what the cache lacks; verifies each SHA-256."""
    paths = []
    for file in files:
        target = cache_path(cache_dir, file)
        if target.is_file() and target.stat().st_size == file.size:
            paths.append(target)
            continue
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        partial = target.parent / f".{secrets.token_hex(6)}.part"
        try:
            with open(partial, "wb") as handle:
                writer = _HashingWriter(handle)
                transport.stream_to(file.download_path or f"/files/{file.id}/content", writer)
            digest = writer.hasher.hexdigest()
            if file.sha256 and digest != file.sha256.lower():
                raise RolloutError(
                    f"downloaded {file.name} ({file.id}) but its SHA-256 is {digest}, not {file.sha256}; "
                    "the transfer was corrupted - try again"
                )
            os.replace(partial, target)
        finally:
            if partial.exists():
                partial.unlink()
        paths.append(target)
    return paths


@dataclass
class FileSource:
    """Bytes to upload and the name/media type to give them."""

    name: str
    media_type: str
    path: Path | None = None
    data: bytes | None = None
    sha256: str = ""

    def open(self) -> IO[bytes] | bytes:
        if self.path is not None:
            return open(self.path, "rb")
        return self.data or b""

    def digest(self) -> str:
        if not self.sha256:
            hasher = hashlib.sha256()
            if self.path is not None:
                with open(self.path, "rb") as handle:
                    for chunk in iter(lambda: handle.read(1 << 20), b""):
                        hasher.update(chunk)
            else:
                hasher.update(self.data or b"")
            self.sha256 = hasher.hexdigest()
        return self.sha256


def guess_media_type(name: str) -> str:
    return mimetypes.guess_type(name)[0] or "application/octet-stream"


def to_source(value: Any, name: str | None = None, media_type: str | None = None) -> FileSource:
    """A path, bytes, (name, bytes) or (name, bytes, media_type) as something uploadable."""
    if isinstance(value, tuple) and len(value) in (2, 3):
        name = name or str(value[0])
        media_type = media_type or (value[2] if len(value) == 3 else None)
        value = value[1]
    if isinstance(value, bytes | bytearray | memoryview):
        data = bytes(value)
        if not name:
            name = f"file-{hashlib.sha256(data).hexdigest()[:12]}"
        return FileSource(name, media_type or guess_media_type(name), data=data)
    if isinstance(value, str | os.PathLike):
        path = Path(value).expanduser()
        if not path.is_file():
            raise RolloutError(f"cannot upload {value!s}: no such file")
        name = name or path.name
        return FileSource(name, media_type or guess_media_type(name), path=path)
    raise TypeError(f"a file must be a path, bytes, a (name, bytes) tuple or a file id, not {type(value).__name__}")


def is_file_id(value: Any) -> bool:
    return isinstance(value, str) and value.startswith("file_") and not Path(value).exists()


def upload_params(source: FileSource) -> tuple[dict[str, str], dict[str, str]]:
    return {"name": source.name}, {"Content-Type": source.media_type}
