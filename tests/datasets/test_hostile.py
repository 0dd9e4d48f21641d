"""Hostile archives are refused with a problem naming what is wrong, and nothing is stored."""

from __future__ import annotations

import io
import stat
import uuid
import zipfile
from pathlib import Path

import pytest

from rollout_server.context import AppContext
from tests.api.factories import assert_problem
from tests.conftest import Tenant
from tests.datasets.helpers import API

TASKS = b'{"key": "a", "files": ["files/x.txt"]}\n'


def _zip(entries: list[tuple[zipfile.ZipInfo | str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for info, data in entries:
            archive.writestr(info, data)
    return buffer.getvalue()


def _symlink(name: str, target: str) -> tuple[zipfile.ZipInfo, bytes]:
    info = zipfile.ZipInfo(name)
    info.create_system = 3
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info, target.encode()


def _bomb() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr("tasks.jsonl", TASKS)
        with archive.open("files/zeros.bin", "w", force_zip64=True) as out:
            block = b"\0" * (1024 * 1024)
            for _ in range(64):
                out.write(block)
    return buffer.getvalue()


def _absolute() -> bytes:
    data = _zip([("tasks.jsonl", TASKS), ("xxtc/passwd", b"root")])
    return data.replace(b"xxtc/passwd", b"/etc/passwd")


HOSTILE = {
    "zip-slip": lambda: _zip([("tasks.jsonl", TASKS), ("files/../../escape.txt", b"x")]),
    "absolute": _absolute,
    "symlink": lambda: _zip([("tasks.jsonl", TASKS), _symlink("files/x.txt", "/etc/passwd")]),
    "bomb": _bomb,
    "harbor-slip": lambda: _zip([("t/task.toml", b'version = "1.0"'), ("t/../../../evil.sh", b"rm -rf /")]),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
async def test_hostile_archives_are_refused_and_nothing_is_stored(api: Tenant, ctx: AppContext, tmp_path: Path,
                                                                  case: str) -> None:
    blobs = Path(ctx.settings.data_dir)
    before = sorted(p for p in blobs.rglob("*") if p.is_file() and "sha256" in p.parts)
    name = f"evil-{uuid.uuid4().hex[:6]}"
    fmt = "harbor" if case.startswith("harbor") else "jsonl"
    response = await api.client.post(f"{API}/datasets/{name}/import", params={"create": "true", "format": fmt},
                                     content=HOSTILE[case]())
    body = assert_problem(response, 422)
    assert "refused" in body["detail"], body
    assert (await api.client.get(f"{API}/datasets/{name}")).status_code == 404
    after = sorted(p for p in blobs.rglob("*") if p.is_file() and "sha256" in p.parts)
    assert after == before
    assert not (tmp_path.parent / "escape.txt").exists() and not list(blobs.rglob("escape.txt"))


async def test_too_many_entries_are_refused(api: Tenant, ctx: AppContext, monkeypatch: pytest.MonkeyPatch) -> None:
    from rollout_server.datasets import archive

    monkeypatch.setattr(archive.ArchiveLimits, "__init__", _small_limits)
    entries: list[tuple[zipfile.ZipInfo | str, bytes]] = [("tasks.jsonl", TASKS)]
    entries += [(f"files/{i}.txt", b"x") for i in range(20)]
    response = await api.client.post(f"{API}/datasets/many-{uuid.uuid4().hex[:6]}/import",
                                     params={"create": "true"}, content=_zip(entries))
    assert "entries" in assert_problem(response, 422)["detail"]


def _small_limits(self: object, max_entries: int = 10, **kwargs: object) -> None:
    object.__setattr__(self, "max_entries", 10)
    object.__setattr__(self, "max_total_bytes", 10**9)
    object.__setattr__(self, "max_ratio", 200.0)
    object.__setattr__(self, "ratio_floor", 1024 * 1024)
