"""Dataset formats, both directions: JSONL (+ files, as a zip), Harbor-style folders (zip), NeMo Gym JSONL.

Imports read a spooled upload (zips are checked by `..archive` before anything is stored) and write one
new version through `DatasetWriter`; exports stream, page by page, so memory does not grow with the dataset.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from typing import IO, Literal

from ...context import AppContext
from ...errors import InvalidInput
from ...files.bucket import FileReader
from ...files.service import guess_media_type, record_upload
from ...models import File
from ...storage.base import ingest_stream
from ..archive import ArchiveLimits, ZipStream, check_name, is_zip, open_archive, read_entry
from ..transfer import DatasetWriter, FileResolver, ImportSummary, export_pages
from . import harbor, jsonl, nemo

DatasetFormat = Literal["jsonl", "harbor", "nemo-gym"]
ZIP_MEDIA_TYPE = "application/zip"
JSONL_MEDIA_TYPE = "application/x-ndjson"


def import_dataset(ctx: AppContext, workspace_id: str, source: IO[bytes], fmt: DatasetFormat, dataset: str, *,
                   create: bool, replace: bool, message: str | None, limits: ArchiveLimits) -> ImportSummary:
    """Import a spooled body as one new version of `dataset` (created when missing and `create`)."""
    head = source.read(4)
    source.seek(0)
    with ctx.db.transaction() as session:
        writer = DatasetWriter(session, workspace_id, dataset, create=create, replace=replace,
                               message=message or f"import ({fmt})")
        files = FileResolver(session, workspace_id)
        parse = nemo.record_from_line if fmt == "nemo-gym" else jsonl.record_from_line
        if not is_zip(head):
            if fmt == "harbor":
                raise InvalidInput("A Harbor dataset is a zip of task folders; send the folder zipped.",
                                   field="format")
            for where, line in jsonl.parse_lines(source):
                writer.add(parse(line, where, files), where)
            return writer.finish()
        archive, infos = open_archive(source, limits)
        with archive:
            entries = [(check_name(info.filename), info) for info in infos]
            if fmt == "harbor":
                _read_harbor(ctx, workspace_id, archive, entries, files, writer)
                return writer.finish()
            for path, info in entries:
                if path.startswith("files/"):
                    files.add_archive_file(path, _ingest(ctx, session, workspace_id, archive, info, path))
            tasks = [info for path, info in entries if path == jsonl.TASKS_NAME] or \
                [info for path, info in entries if path.endswith(".jsonl") and "/" not in path]
            if len(tasks) != 1:
                raise InvalidInput(f"The zip needs one {jsonl.TASKS_NAME} at its top level (found {len(tasks)}).",
                                   field="archive")
            with archive.open(tasks[0]) as lines:
                for where, line in jsonl.parse_lines(lines):
                    writer.add(parse(line, where, files), where)
        return writer.finish()


def _ingest(ctx: AppContext, session: object, workspace_id: str, archive: zipfile.ZipFile, info: zipfile.ZipInfo,
            path: str) -> File:
    from sqlalchemy.orm import Session

    assert isinstance(session, Session)
    blob = ingest_stream(ctx.store, workspace_id, read_entry(archive, info))
    parts = path.split("/")
    if len(parts) == 3 and len(parts[1]) == 64 and parts[1] != blob.sha256:
        raise InvalidInput(f"The archive entry {path!r} is named for SHA-256 {parts[1]} but its bytes hash to "
                           f"{blob.sha256}; the archive is damaged.", field="archive")
    name = parts[-1]
    return record_upload(session, workspace_id, blob, name, guess_media_type(name, None))


def _read_harbor(ctx: AppContext, workspace_id: str, archive: zipfile.ZipFile,
                 entries: list[tuple[str, zipfile.ZipInfo]], files: FileResolver, writer: DatasetWriter) -> None:
    for folder, members in harbor.task_folders(entries):
        config = b"".join(read_entry(archive, members["task.toml"]))
        instruction = b"".join(read_entry(archive, members["instruction.md"])) \
            if "instruction.md" in members else None
        record, paths = harbor.parse_task(folder, config, instruction, list(harbor.ordered(members)))
        record.files = [_ingest(ctx, writer.session, workspace_id, archive, members[p], p) for p in paths]
        writer.add(record, folder or ".")


def export_dataset(ctx: AppContext, workspace_id: str, dataset_id: str, name: str, description: str | None,
                   version: int, fmt: DatasetFormat) -> Iterator[bytes]:
    if fmt == "nemo-gym":
        for page in export_pages(ctx, dataset_id, version):
            yield b"".join(nemo.task_line(task) for task in page)
        return
    reader = FileReader(ctx, workspace_id)
    stream = ZipStream()
    archive = zipfile.ZipFile(stream, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1)  # type: ignore[call-overload]
    if fmt == "harbor":
        yield from _write_harbor(ctx, archive, stream, reader, dataset_id, name, description, version)
    else:
        wanted: dict[tuple[str, str], File] = {}
        with archive.open(_entry(jsonl.TASKS_NAME), "w", force_zip64=True) as out:
            for page in export_pages(ctx, dataset_id, version):
                for task in page:
                    out.write(jsonl.task_line(task, with_paths=True))
                    for file in task.files:
                        wanted.setdefault((file.sha256, file.name), file)
                yield stream.take()
        for (sha, file_name), file in sorted(wanted.items()):
            yield from _write_file(archive, stream, reader, jsonl.file_path(sha, file_name), file)
    archive.close()
    yield stream.take()


# Every entry carries the same fixed time (the zip format's earliest) instead of the clock's: the same dataset
# version exports to the same bytes, whenever it is downloaded.
_ENTRY_TIME = (1980, 1, 1, 0, 0, 0)


def _entry(path: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(path, date_time=_ENTRY_TIME)
    info.compress_type = zipfile.ZIP_DEFLATED
    info._compresslevel = 1  # type: ignore[attr-defined]  # as the archive's own default; ZipInfo has no public field
    info.external_attr = 0o644 << 16  # a regular file, readable by all
    return info


def _write_file(archive: zipfile.ZipFile, stream: ZipStream, reader: FileReader, path: str,
                file: File) -> Iterator[bytes]:
    with archive.open(_entry(path), "w", force_zip64=True) as out:
        for chunk in reader.chunks(file):
            out.write(chunk)
            yield stream.take()


def _write_harbor(ctx: AppContext, archive: zipfile.ZipFile, stream: ZipStream, reader: FileReader,
                  dataset_id: str, name: str, description: str | None, version: int) -> Iterator[bytes]:
    listed: list[tuple[str, str]] = []
    used: set[str] = set()
    for page in export_pages(ctx, dataset_id, version):
        for task in page:
            folder = harbor.folder_name(task.key)
            while folder in used:
                folder = f"{folder}-{len(used)}"
            used.add(folder)
            listed.append((task.key, folder))
            paths = harbor.file_paths(task)
            archive.writestr(_entry(f"{folder}/instruction.md"), task.instruction)
            archive.writestr(_entry(f"{folder}/task.toml"), harbor.task_toml(task, paths))
            for path, file in zip(paths, task.files, strict=True):
                yield from _write_file(archive, stream, reader, f"{folder}/{path}", file)
        yield stream.take()
    archive.writestr(_entry("dataset.toml"), harbor.dataset_toml(name, description, version, listed))
