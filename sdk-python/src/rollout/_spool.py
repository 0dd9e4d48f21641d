"""The on-disk tail of the delivery queue: numbered segment files, one folder per writing process.

Layout under the spool folder (one sub-folder per server and key, see Settings.resolved_spool_dir):

    <writer>.lock          held with flock by the live process that writes <writer>/
    <writer>/000000000042.jsonl   one segment: a batch of operations, one per line

A segment is written to a temporary name, fsynced and renamed, so a reader sees whole segments only.
When a process dies its lock is released by the kernel; the next process that can take the lock
adopts the folder and delivers its segments in number order.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger("rollout")

# Operation types in a segment line: "<type>\t<json>". A finish is an ingest `finishes` item
# ({"rollout_id", "status", "output", "error", "metadata", "ended_at"}); spool files of SDK versions that
# posted finishes one by one hold LEGACY_FINISH lines ({"rollout_id", "body": {...}}), read as finishes.
EVENT, SCORE, FINISH, RUN_FINISH, LEGACY_FINISH = "e", "s", "F", "r", "f"


@dataclass
class WireOp:
    """One encoded operation, ready to send or to spool. `ref` is the rollout (finish) or run (run finish)
    a caller may be waiting on."""

    type: str
    text: str
    future: object | None = None
    attempts: int = 0
    size: int = field(default=0)
    ref: str | None = None

    def __post_init__(self) -> None:
        if not self.size:
            self.size = len(self.text.encode()) if not self.text.isascii() else len(self.text)

    def line(self) -> str:
        return f"{self.type}\t{self.text}\n"


def parse_segment(text: str) -> list[WireOp]:
    ops = []
    for line in text.splitlines():
        kind, sep, body = line.partition("\t")
        if not sep or not body:
            continue
        # Spooled operations may have been sent before the process stopped: treat them as retries.
        if kind in (EVENT, SCORE):
            ops.append(WireOp(kind, body, attempts=1))
        elif kind in (FINISH, RUN_FINISH, LEGACY_FINISH):
            try:
                payload = json.loads(body)
            except ValueError:
                log.warning("rollout: skipping an unreadable finish in the spool: %.200s", body)
                continue
            if kind == LEGACY_FINISH:
                payload = {"rollout_id": payload.get("rollout_id"), **(payload.get("body") or {})}
                kind, body = FINISH, json.dumps(payload)
            ref = payload.get("run") if kind == RUN_FINISH else payload.get("rollout_id")
            ops.append(WireOp(kind, body, attempts=1, ref=ref))
    return ops


def _try_lock(path: Path) -> int | None:
    """Open and exclusively lock `path`; None when another live process holds it."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return None
    if fcntl is None:  # pragma: no cover
        return fd
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _pid_alive(pid: int) -> bool:  # pragma: no cover - only without flock
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def write_segment(path: Path, ops: list[WireOp]) -> None:
    tmp = path.with_suffix(".tmp")
    # Trace data can be sensitive: owner-only, like the folders.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with open(fd, "w", encoding="utf-8") as handle:
        handle.writelines(op.line() for op in ops)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


@dataclass
class Orphan:
    """A dead writer's folder, locked by us while we deliver it."""

    name: str
    folder: Path
    lock_path: Path
    lock_fd: int
    segments: list[Path]

    def release(self, *, remove: bool) -> None:
        if remove:
            with contextlib.suppress(OSError):
                for leftover in self.folder.glob("*"):
                    leftover.unlink()
                self.folder.rmdir()
            with contextlib.suppress(OSError):
                self.lock_path.unlink()
        with contextlib.suppress(OSError):
            os.close(self.lock_fd)


class Spool:
    """This process's segments, plus adoption of dead processes' folders."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.writer = f"{int(time.time())}-{os.getpid()}-{secrets.token_hex(4)}"
        self.folder = root / self.writer
        self._lock_fd: int | None = None
        self._segments: list[int] = []  # sorted numbers of our segments on disk
        self._mutex = threading.Lock()
        self._adopting: set[str] = set()

    # -- our own segments -------------------------------------------------------------------------------

    def _ensure_folder(self) -> None:
        if self._lock_fd is None:
            # Lock before the folder exists, so no other process ever sees our folder unlocked.
            self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._lock_fd = _try_lock(self.root / f"{self.writer}.lock")
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)

    def path_of(self, number: int) -> Path:
        return self.folder / f"{number:012d}.jsonl"

    def write(self, number: int, ops: list[WireOp]) -> None:
        """Persist a batch under its reserved number (replacing an older copy of the same number)."""
        with self._mutex:
            self._ensure_folder()
            write_segment(self.path_of(number), ops)
            if number not in self._segments:
                self._segments.append(number)
                self._segments.sort()

    def oldest(self) -> int | None:
        with self._mutex:
            return self._segments[0] if self._segments else None

    def oldest_numbers(self, count: int) -> list[int]:
        with self._mutex:
            return self._segments[:count]

    def has_segments(self) -> bool:
        return bool(self._segments)

    def count(self) -> int:
        return len(self._segments)

    def read(self, number: int) -> list[WireOp]:
        try:
            return parse_segment(self.path_of(number).read_text(encoding="utf-8"))
        except OSError as error:
            log.warning("rollout: cannot read spool segment %s (%s); skipping it", self.path_of(number), error)
            return []

    def remove(self, number: int) -> None:
        with self._mutex:
            with contextlib.suppress(OSError):
                self.path_of(number).unlink()
            if number in self._segments:
                self._segments.remove(number)

    def close(self) -> None:
        """Release our lock; with segments left, the folder stays for the next process to adopt."""
        with self._mutex:
            if self._lock_fd is None:
                return
            if not self._segments:
                with contextlib.suppress(OSError):
                    for leftover in self.folder.glob("*"):
                        leftover.unlink()
                    self.folder.rmdir()
                with contextlib.suppress(OSError):
                    (self.root / f"{self.writer}.lock").unlink()
            with contextlib.suppress(OSError):
                os.close(self._lock_fd)
            self._lock_fd = None

    def forget_after_fork(self) -> None:
        """In a forked child: the parent owns these segments and this lock; start a fresh identity."""
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._lock_fd)
        self.__init__(self.root)  # type: ignore[misc]

    # -- other processes' segments ----------------------------------------------------------------------

    def orphans_present(self) -> bool:
        """Cheap check (one listdir) for folders other than ours."""
        try:
            names = os.listdir(self.root)
        except OSError:
            return False
        return any(n.endswith(".lock") and n[:-5] != self.writer for n in names) or any(
            n != self.writer and not n.endswith((".lock", ".tmp")) for n in names
        )

    def adopt(self) -> list[Orphan]:
        """Lock and return every folder whose writer is gone (their segments oldest first)."""
        found: list[Orphan] = []
        try:
            names = sorted(os.listdir(self.root))
        except OSError:
            return found
        for name in names:
            if name.endswith(".lock") and name[:-5] != self.writer and name[:-5] not in names:
                # A lock whose folder never got created: remove it if its owner is gone.
                stale = _try_lock(self.root / name)
                if stale is not None:
                    with contextlib.suppress(OSError):
                        (self.root / name).unlink()
                    os.close(stale)
                continue
            if name.endswith((".lock", ".tmp")) or name == self.writer or name in self._adopting:
                continue
            folder = self.root / name
            if not folder.is_dir():
                continue
            lock_path = self.root / f"{name}.lock"
            fd = _try_lock(lock_path)
            if fd is None:
                continue
            if fcntl is None:  # pragma: no cover
                pid = int(name.split("-")[1]) if name.count("-") >= 2 and name.split("-")[1].isdigit() else -1
                if pid > 0 and _pid_alive(pid):
                    os.close(fd)
                    continue
            if not folder.is_dir():  # adopted and finished by someone else meanwhile
                os.close(fd)
                continue
            segments = sorted(p for p in folder.glob("*.jsonl"))
            self._adopting.add(name)
            found.append(Orphan(name, folder, lock_path, fd, segments))
        return found

    def done_adopting(self, orphan: Orphan, *, remove: bool) -> None:
        orphan.release(remove=remove)
        self._adopting.discard(orphan.name)
