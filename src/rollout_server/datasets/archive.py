"""Reading uploaded zip archives safely, and writing zips to a stream.

Nothing is ever extracted to disk: entries are read straight into the blob store or the importer, so an
entry name is only ever a lookup key. Even so, names that would escape a folder (`../`, absolute paths,
drive letters), symlinks, too many entries and zip bombs are refused before anything is written.
"""

from __future__ import annotations

import stat
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

from ..errors import InvalidInput, PayloadTooLarge

ZIP_MAGIC = b"PK\x03\x04"
EMPTY_ZIP_MAGIC = b"PK\x05\x06"


@dataclass(frozen=True)
class ArchiveLimits:
    max_entries: int = 500_000
    max_total_bytes: int = 20 * 1024**3
    # A deflated entry this many times smaller than its content is a bomb, not data (text compresses ~10x).
    max_ratio: float = 200.0
    # Below this size a high ratio is harmless (a 1 KiB run of spaces compresses 100x).
    ratio_floor: int = 1024 * 1024


def is_zip(head: bytes) -> bool:
    return head.startswith((ZIP_MAGIC, EMPTY_ZIP_MAGIC))


def _refuse(message: str, name: str) -> InvalidInput:
    return InvalidInput(f"The archive is refused: {message} ({name!r}). Nothing was imported.", field="archive")


def check_name(name: str) -> str:
    """The entry's path inside the archive, or raise when it could point outside its folder."""
    if "\x00" in name or "\\" in name:
        raise _refuse("an entry name holds a backslash or NUL byte", name)
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise _refuse("an entry has an absolute path", name)
    parts = name.split("/")
    if any(part == ".." for part in parts):
        raise _refuse("an entry climbs out of the archive with '..'", name)
    return "/".join(part for part in parts if part not in ("", "."))


def open_archive(source: IO[bytes], limits: ArchiveLimits) -> tuple[zipfile.ZipFile, list[zipfile.ZipInfo]]:
    """Open a spooled upload as a zip and check every entry; returns the regular-file entries."""
    try:
        archive = zipfile.ZipFile(source)
    except zipfile.BadZipFile as error:
        raise InvalidInput(f"The body is not a readable zip archive: {error}.", field="archive") from error
    infos = archive.infolist()
    if len(infos) > limits.max_entries:
        raise InvalidInput(f"The archive is refused: it has {len(infos)} entries, more than the limit of "
                           f"{limits.max_entries}. Split it into several imports.", field="archive")
    total = 0
    files: list[zipfile.ZipInfo] = []
    for info in infos:
        clean = check_name(info.filename)
        mode = info.external_attr >> 16
        if info.create_system == 3 and stat.S_ISLNK(mode):
            raise _refuse("an entry is a symbolic link", info.filename)
        if info.flag_bits & 0x1:
            raise _refuse("an entry is encrypted", info.filename)
        if info.is_dir() or not clean:
            continue
        total += info.file_size
        if total > limits.max_total_bytes:
            raise PayloadTooLarge(f"The archive is refused: its entries hold more than {limits.max_total_bytes} "
                                  "bytes uncompressed. Nothing was imported.")
        if info.file_size > limits.ratio_floor and info.file_size > limits.max_ratio * max(info.compress_size, 1):
            raise _refuse(f"an entry expands {info.file_size // max(info.compress_size, 1)} times "
                          "(a zip bomb)", info.filename)
        files.append(info)
    return archive, files


def read_entry(archive: zipfile.ZipFile, info: zipfile.ZipInfo, chunk: int = 1024 * 1024) -> Iterator[bytes]:
    """An entry's bytes; never more than its declared size, whatever the compressed stream holds."""
    left = info.file_size
    with archive.open(info) as handle:
        while True:
            data = handle.read(chunk)
            if not data:
                break
            left -= len(data)
            if left < 0:
                raise _refuse("an entry holds more bytes than it declares", info.filename)
            yield data


class ZipStream:
    """A write-only file object whose bytes are taken out as they are written, for streaming zips."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self._size = 0

    def write(self, data: bytes) -> int:
        if data:
            self._parts.append(bytes(data))
            self._size += len(data)
        return len(data)

    def tell(self) -> int:
        return self._size

    def flush(self) -> None:
        pass

    def take(self) -> bytes:
        data = b"".join(self._parts)
        self._parts.clear()
        return data
