"""The job-queue worker: claims due jobs and runs them on a small thread pool.

The server runs one in a background thread (`ROLLOUT_WORKER_IN_PROCESS`, on by default — the only worker a
SQLite deployment needs); PostgreSQL deployments can run any number of `rollout-server worker` processes
instead. An idle worker checks for due jobs with a read (no lock) and takes the write path only to claim.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from ..context import AppContext
from ..db.types import utcnow
from ..ids import new_id
from .repository import JobRepository

log = logging.getLogger("rollout.worker")


def _handlers() -> dict[str, Callable[[AppContext, str, str], str]]:
    from ..exports.jobs import process_export_job
    from .runner import process_score_job

    return {"score": process_score_job, "export": process_export_job}


class Worker:
    def __init__(self, ctx: AppContext, *, worker_id: str | None = None, concurrency: int | None = None,
                 poll_seconds: float | None = None) -> None:
        self.ctx = ctx
        self.worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{new_id('job')[-6:]}"
        self.concurrency = concurrency or ctx.settings.worker_concurrency
        self.poll_seconds = poll_seconds or ctx.settings.worker_poll_seconds
        self.processed = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="rollout-job")

    # -- one round -------------------------------------------------------------------------------------

    def claim(self) -> list[tuple[str, str]]:
        now = utcnow()
        with self.ctx.db.reading() as session:
            if not JobRepository(session).any_due(now):
                return []
        with self.ctx.db.transaction() as session:
            jobs = JobRepository(session).claim(self.worker_id, self.concurrency, now,
                                                self.ctx.settings.job_lease_seconds)
            return [(job.id, job.kind) for job in jobs]

    def _run(self, job_id: str, kind: str) -> str:
        handler = _handlers().get(kind)
        try:
            if handler is None:
                raise RuntimeError(f"no handler for job kind {kind!r}")
            return handler(self.ctx, job_id, self.worker_id)
        except Exception:
            # A bug in the handler itself: leave the job to its lease (it is retried) and say why.
            log.error("job %s (%s) failed in worker %s:\n%s", job_id, kind, self.worker_id, traceback.format_exc())
            self._release(job_id, traceback.format_exc(limit=3))
            return "error"

    def _release(self, job_id: str, message: str) -> None:
        with self.ctx.db.transaction() as session:
            job = JobRepository(session).lock_owned(job_id, self.worker_id)
            if job is None:
                return
            job.last_error = message[-4000:]
            if job.attempts >= job.max_attempts:
                job.status, job.finished_at = "failed", utcnow()
            else:
                job.status = "queued"
            job.locked_until = None

    def run_once(self) -> int:
        """Claim up to `concurrency` due jobs and run them to the end; returns how many were claimed."""
        claimed = self.claim()
        if claimed:
            list(self._pool.map(lambda jk: self._run(*jk), claimed))
            self.processed += len(claimed)
        return len(claimed)

    def drain(self, timeout: float = 60.0) -> int:
        """Run rounds until no job is due (tests and `rollout-server worker --once`)."""
        deadline = time.monotonic() + timeout
        total = 0
        while time.monotonic() < deadline:
            count = self.run_once()
            total += count
            if count == 0:
                return total
        raise TimeoutError(f"the job queue was not drained within {timeout} s")

    # -- forever ---------------------------------------------------------------------------------------

    def run_forever(self) -> None:
        while not self._stop.is_set():
            try:
                count = self.run_once()
            except Exception:  # the database went away for a moment: wait and try again
                log.warning("worker %s could not claim jobs:\n%s", self.worker_id, traceback.format_exc(limit=2))
                count = 0
            if count == 0:
                self._stop.wait(self.poll_seconds)

    def start(self) -> Worker:
        self._thread = threading.Thread(target=self.run_forever, name=f"rollout-worker-{self.worker_id}",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self._pool.shutdown(wait=True, cancel_futures=True)
