"""Background delivery: a bounded in-memory queue, one sender thread, batches, retries and the spool.

The caller's cost of recording an event is one deque append (encoding happens here, off the hot path).
The sender drains the queue in batches bounded by count, bytes and latency and posts them to
/api/v1/ingest: events, scores and rollout finishes together (the server applies a batch's finishes
after its events and scores). Operations keep their order: a rollout's finish rides in the same batch
as the events queued before it or in a later one, a run's finish is posted only after everything queued
before it is acknowledged, and once anything is in the spool, newer batches go to the spool behind it.
Each batch reserves its segment number when it is drained, so a batch that fails after newer ones were
spooled still lands in front of them.
"""

from __future__ import annotations

import atexit
import contextlib
import datetime as _dt
import itertools
import json
import logging
import os
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import httpx

from . import _encoding as _json
from ._config import Settings
from ._errors import DeliveryError, api_error
from ._http import USER_AGENT, api_path, backoff_delay, retry_after
from ._spool import EVENT, FINISH, RUN_FINISH, SCORE, Orphan, Spool, WireOp, parse_segment, write_segment

log = logging.getLogger("rollout")

_UTC = _dt.UTC
_TIME_FIELDS = ("started_at", "ended_at")
_logged: set[str] = set()
_logged_lock = threading.Lock()


def log_once(key: str, level: int, message: str, *args: Any) -> None:
    """Telemetry problems are reported once per kind, never raised into the agent."""
    with _logged_lock:
        if key in _logged:
            return
        _logged.add(key)
    log.log(level, message, *args)


_second = [-1, ""]


def _iso(value: Any) -> Any:
    """Epoch seconds to ISO 8601 UTC; the date-and-time part is formatted once per second."""
    if not isinstance(value, float):
        return value
    whole = int(value)
    micros = int((value - whole) * 1_000_000)
    if micros >= 1_000_000:
        whole, micros = whole + 1, 0
    cached = _second
    if cached[0] != whole:
        cached[1] = _dt.datetime.fromtimestamp(whole, _UTC).strftime("%Y-%m-%dT%H:%M:%S")
        cached[0] = whole
    return f"{cached[1]}.{micros:06d}+00:00"


class _Outcome:
    OK, REJECTED, RETRY = "ok", "rejected", "retry"


class Sender:
    """Owns the queue, the thread and the spool for one client (one server + key)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._queue: deque[tuple[Any, ...]] = deque()
        self._max_queue = settings.max_queue_size
        self._batch_max = settings.batch_max_events
        self._wake = threading.Event()
        self._drain_lock = threading.Lock()
        self._segment_numbers = itertools.count(1)
        self._spool = Spool(settings.resolved_spool_dir)
        # Callers blocked in finish(wait=True) / run.finish(), by (operation type, rollout or run id): the
        # operation itself may travel through the spool, where a Future cannot go.
        self._waiters: dict[tuple[str, str], list[Future[Any]]] = {}
        self._waiters_lock = threading.Lock()
        self._orphans: list[Orphan] = []
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._idle = threading.Condition()
        self._busy = False
        self._flush_waiters = 0
        self._segments_pending = 0
        self._kicked = False
        self._stopping = False
        self._closed = False
        self._failures = 0
        self._retry_at = 0.0
        self._http: httpx.Client | None = None
        # sent/duplicates/rejected count events and scores; finished counts rollouts finished by this sender.
        self.stats = {"sent": 0, "duplicates": 0, "rejected": 0, "spooled": 0, "dropped": 0, "finished": 0}
        _register(self)

    # -- caller side -----------------------------------------------------------------------------------

    def enqueue(self, op: tuple[Any, ...]) -> None:
        """Never blocks on the network and never raises; spills to disk when the queue is full."""
        if self._thread is None:  # first event, or the client was closed
            if self._closed:
                log_once(
                    "closed",
                    logging.WARNING,
                    "rollout: an event was recorded after its client was closed; it is dropped",
                )
                return
            try:
                self.start()
            except RuntimeError as error:  # e.g. "can't create new thread at interpreter shutdown"
                log_once("start", logging.ERROR, "rollout: cannot start the background sender: %s", error)
                return
        queue = self._queue
        if len(queue) >= self._max_queue:
            self._overflow(op)
            return
        queue.append(op)
        if len(queue) >= self._batch_max:
            self._wake.set()

    def start(self) -> None:
        with self._start_lock:
            if self._thread is not None or self._closed:
                return
            self._thread = threading.Thread(target=self._run, name="rollout-sender", daemon=True)
            self._thread.start()

    def kick(self) -> None:
        """Send what is queued now instead of waiting for the batch to fill (used by wait=True calls)."""
        if self._thread is None:
            self.start()
        self._kicked = True
        self._wake.set()

    def start_if_spool_waiting(self) -> None:
        """A previous process left undelivered data for this server: start delivering it now."""
        if self._spool.orphans_present():
            self._scan_orphans()  # before the thread starts, so a flush() right away waits for them
            self.start()

    def flush(self, timeout: float | None = None) -> bool:
        """Block until everything queued so far is on the server; False if `timeout` ran out first."""
        if self._closed or (self._thread is None and not self._queue):
            return self._settled()
        if self._thread is None:
            self.start()
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._idle:
            self._flush_waiters += 1
            try:
                while not self._settled():
                    self._wake.set()
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        return False
                    self._idle.wait(0.05 if remaining is None else min(remaining, 0.05))
                return True
            finally:
                self._flush_waiters -= 1

    def close(self, timeout: float | None = None) -> bool:
        """Flush (bounded by `timeout`), stop the thread and leave anything undelivered in the spool."""
        if self._closed:
            return True
        timeout = self.settings.atexit_timeout if timeout is None else timeout
        # While the server is known to be down, don't wait for it: spool and go.
        delivered = self.flush(timeout if not self._spool.has_segments() else min(timeout, 1.0))
        self._stopping = True
        self._wake.set()
        self._closed = True
        if self._thread is not None:
            self._thread.join(timeout=max(2.0, min(timeout, 10.0)))
            self._thread = None
        self._persist_memory()
        for orphan in self._orphans:
            self._spool.done_adopting(orphan, remove=not orphan.segments)
        self._orphans = []
        self._spool.close()
        if self._http is not None:
            with contextlib.suppress(Exception):
                self._http.close()
        if not delivered and self._spool.folder.exists():
            log.warning(
                "rollout: some trace data could not be delivered; it is kept in %s and will be sent "
                "by the next process that uses this spool folder",
                self._spool.folder,
            )
        return delivered

    def pending(self) -> int:
        return len(self._queue)

    def _settled(self) -> bool:
        return (
            not self._queue
            and not self._busy
            and not self._spool.has_segments()
            and not self._orphans
            and not self._segments_pending
        )

    def _overflow(self, op: tuple[Any, ...]) -> None:
        """Queue full: move everything queued, then this op, to one spool segment (keeps the order)."""
        try:
            with self._drain_lock:
                batch = list(self._queue)
                self._queue.clear()
                number = next(self._segment_numbers)
                self._segments_pending += 1  # until written, newer batches must not overtake it
            try:
                batch.append(op)
                self._spool_write(number, self._encode(batch))
            finally:
                with self._drain_lock:
                    self._segments_pending -= 1
            log_once(
                "overflow",
                logging.WARNING,
                "rollout: the event queue is full (%d); spilling to %s",
                self._max_queue,
                self._spool.folder,
            )
        except Exception as error:  # never into the agent
            self.stats["dropped"] += 1
            log_once("overflow-error", logging.ERROR, "rollout: could not spill events to disk: %s", error)

    # -- sender thread ---------------------------------------------------------------------------------

    def _run(self) -> None:
        next_scan = 0.0
        while True:
            try:
                now = time.monotonic()
                if now >= next_scan and not self._stopping:
                    next_scan = now + 30.0
                    self._scan_orphans()
                urgent = self._flush_waiters > 0 or self._stopping or self._kicked
                if len(self._queue) < self._batch_max and not urgent:
                    # While the server is down, gather bigger segments instead of many small files.
                    linger = max(self.settings.flush_interval, 1.0) if self._failures else self.settings.flush_interval
                    self._wake.wait(linger)
                self._wake.clear()
                self._kicked = False
                self._busy = True
                try:
                    self._cycle()
                finally:
                    self._busy = False
                    with self._idle:
                        self._idle.notify_all()
                if self._stopping and not self._queue:
                    return
                if self._spool.has_segments() and not self._queue and time.monotonic() < self._retry_at:
                    # Server down: sleep until the next probe (a flush or new events wake us earlier).
                    self._wake.wait(min(self._retry_at - time.monotonic(), 1.0))
            except Exception as error:  # the sender must survive anything
                log_once("sender-crash", logging.ERROR, "rollout: background sender error: %r", error)
                time.sleep(0.1)

    def _cycle(self) -> None:
        with self._drain_lock:
            batch = self._drain()
            number = next(self._segment_numbers) if batch else 0
        if batch:
            wire = self._encode(batch)
            if self._spool.has_segments() or self._segments_pending:
                self._spool_write(number, wire)
            else:
                rest = self._deliver(wire, patient=True)
                if rest:
                    self._spool_write(number, rest)
                    self._mark_down()
        self._deliver_spool()

    def _drain(self) -> list[tuple[Any, ...]]:
        queue = self._queue
        out = []
        popleft = queue.popleft
        for _ in range(min(len(queue), self._batch_max)):
            out.append(popleft())
        return out

    def _encode(self, batch: list[tuple[Any, ...]]) -> list[WireOp]:
        wire: list[WireOp] = []
        limit = self.settings.batch_max_bytes
        for op in batch:
            try:
                kind = op[0]
                if kind == EVENT:
                    fields = op[2]
                    fields["rollout_id"] = op[1]
                    for name in _TIME_FIELDS:
                        value = fields.get(name)
                        if value is not None:
                            fields[name] = _iso(value)
                    text = _json.encode_object(fields)
                    item = WireOp(EVENT, text)
                    if item.size > limit:
                        item = WireOp(EVENT, self._too_large(fields, item.size))
                elif kind == SCORE:
                    item = WireOp(SCORE, _json.dumps({"rollout_id": op[1], **op[2]}))
                elif kind == FINISH:
                    body = {"rollout_id": op[1], **op[2]}
                    if "ended_at" in body:
                        body["ended_at"] = _iso(body["ended_at"])
                    item = WireOp(FINISH, _json.encode_object(body), ref=op[1])
                    if item.size > limit:
                        body["output"] = f"<output dropped by the SDK: {item.size} bytes is over the limit>"
                        item = WireOp(FINISH, _json.encode_object(body), ref=op[1])
                    self._register(FINISH, op[1], op[3])
                elif kind == RUN_FINISH:
                    item = WireOp(RUN_FINISH, _json.dumps({"run": op[1], "body": op[2]}), ref=op[1])
                    self._register(RUN_FINISH, op[1], op[3])
                else:
                    continue
                wire.append(item)
            except Exception as error:
                self.stats["dropped"] += 1
                log_once(
                    "encode",
                    logging.ERROR,
                    "rollout: dropped an operation that could not be encoded: %r",
                    error,
                )
        return wire

    def _register(self, kind: str, ref: str, future: Any) -> None:
        if isinstance(future, Future):
            with self._waiters_lock:
                self._waiters.setdefault((kind, ref), []).append(future)

    def _settle(self, op: WireOp, *, value: Any = True, error: Exception | None = None) -> None:
        """A finish or run finish is done (or refused): release the caller waiting on it, if any."""
        if op.ref is None or not self._waiters:
            return
        with self._waiters_lock:
            waiting = self._waiters.get((op.type, op.ref))
            future = waiting.pop(0) if waiting else None
            if waiting is not None and not waiting:
                del self._waiters[(op.type, op.ref)]
        _resolve(future, value=value, error=error)

    def _too_large(self, fields: dict[str, Any], size: int) -> str:
        log_once(
            "too-large",
            logging.WARNING,
            "rollout: an event of %d bytes is over the %d-byte batch limit; it is replaced by a log event",
            size,
            self.settings.batch_max_bytes,
        )
        keep = {k: fields.get(k) for k in ("id", "seq", "parent_id", "started_at", "ended_at", "rollout_id")}
        keep.update(
            kind="log",
            level="warning",
            name=fields.get("name"),
            message=f"{fields.get('kind')} event of {size} bytes dropped by the SDK (over the request limit)",
            metadata={"original_kind": fields.get("kind"), "original_size": size},
        )
        return _json.encode_object(keep)

    def _spool_write(self, number: int, ops: list[WireOp]) -> None:
        if not ops:
            return
        try:
            self._spool.write(number, ops)
        except OSError as error:
            self.stats["dropped"] += len(ops)
            log_once(
                "spool-write",
                logging.ERROR,
                "rollout: cannot write the spool at %s (%s); %d operations lost",
                self._spool.folder,
                error,
                len(ops),
            )
            for op in ops:
                self._settle(op, error=DeliveryError(f"could not deliver or spool: {error}"))
            return
        self.stats["spooled"] += len(ops)

    def _persist_memory(self) -> None:
        with self._drain_lock:
            batch = list(self._queue)
            self._queue.clear()
            number = next(self._segment_numbers)
        wire = self._encode(batch)
        if wire:
            self._spool_write(number, wire)

    def _mark_down(self) -> None:
        self._failures += 1
        self._retry_at = time.monotonic() + backoff_delay(self._failures, base=0.5, cap=self.settings.max_backoff)
        log_once(
            "down",
            logging.WARNING,
            "rollout: the server at %s is not accepting trace data; keeping it in %s and retrying in the background",
            self.settings.base_url,
            self._spool.folder,
        )

    def _mark_up(self) -> None:
        if self._failures:
            log.info("rollout: server reachable again; delivering spooled trace data")
        self._failures = 0
        self._retry_at = 0.0

    def _deliver_spool(self) -> None:
        """Send our segments oldest first while the server answers (several small segments per request);
        then one orphan segment per cycle."""
        while self._spool.has_segments():
            if self._stopping and self._failures:
                return
            if time.monotonic() < self._retry_at and not self._stopping:
                return
            numbers: list[int] = []
            ops: list[WireOp] = []
            for number in self._spool.oldest_numbers(64):
                if numbers and len(ops) >= self._batch_max:
                    break
                numbers.append(number)
                ops.extend(self._spool.read(number))
            if not numbers:
                return
            rest = self._deliver(ops, patient=False)
            if rest:
                # Keep what is left under the oldest number, so it stays in front.
                with contextlib.suppress(OSError):
                    self._spool.write(numbers[0], rest)
                for number in numbers[1:]:
                    self._spool.remove(number)
                self._mark_down()
                return
            for number in numbers:
                self._spool.remove(number)
            self._mark_up()
            if len(self._queue) >= self._batch_max:
                return  # keep memory moving; the rest of the spool follows next cycle
        if self._orphans and not self._failures and not self._stopping:
            self._deliver_orphan_segment()

    def _scan_orphans(self) -> None:
        try:
            self._orphans.extend(self._spool.adopt())
        except Exception as error:
            log_once("adopt", logging.WARNING, "rollout: could not read the spool folder: %r", error)

    def _deliver_orphan_segment(self) -> None:
        orphan = self._orphans[0]
        if not orphan.segments:
            self._spool.done_adopting(orphan, remove=True)
            self._orphans.pop(0)
            return
        path = orphan.segments[0]
        try:
            ops = parse_segment(path.read_text(encoding="utf-8"))
        except OSError:
            ops = []
        rest = self._deliver(ops, patient=False)
        if rest:
            with contextlib.suppress(OSError):
                write_segment(path, rest)
            self._mark_down()
            return
        with contextlib.suppress(OSError):
            path.unlink()
        orphan.segments.pop(0)
        if not orphan.segments:
            self._spool.done_adopting(orphan, remove=True)
            self._orphans.pop(0)
            log.info("rollout: delivered trace data left by an earlier process (%s)", orphan.name)

    # -- HTTP ------------------------------------------------------------------------------------------

    def _client(self) -> httpx.Client:
        if self._http is None:
            headers = {"User-Agent": USER_AGENT, "Content-Type": "application/json", **self.settings.headers}
            if self.settings.api_key:
                headers["Authorization"] = f"Bearer {self.settings.api_key}"
            self._http = httpx.Client(
                base_url=self.settings.base_url, headers=headers, timeout=httpx.Timeout(30.0, connect=5.0)
            )
        return self._http

    def _deliver(self, ops: list[WireOp], *, patient: bool) -> list[WireOp]:
        """Send events, scores and finishes in ingest batches, and run finishes in their place between
        them. Returns what is still undelivered (empty: all done).
        `patient`: retry with backoff for up to `retry_window` seconds before giving up."""
        deadline = time.monotonic() + (self.settings.retry_window if patient else 0.0)
        index = 0
        while index < len(ops):
            if ops[index].type == RUN_FINISH:
                if not self._post_run_finish(ops[index], deadline):
                    return ops[index:]
                index += 1
                continue
            end = index
            while end < len(ops) and ops[end].type != RUN_FINISH:
                end += 1
            items = ops[index:end]
            for start, stop in self._chunks(items):
                if not self._post_items(items[start:stop], deadline):
                    return items[start:] + ops[end:]
            index = end
        return []

    def _chunks(self, items: list[WireOp]) -> list[tuple[int, int]]:
        bounds = []
        start, size, count = 0, 0, 0
        for index, op in enumerate(items):
            if count and (count >= self._batch_max or size + op.size + 1 > self.settings.batch_max_bytes):
                bounds.append((start, index))
                start, size, count = index, 0, 0
            size += op.size + 1
            count += 1
        if count:
            bounds.append((start, len(items)))
        return bounds

    def _send(
        self, path: str, body: str, deadline: float, *, retry_conflict: bool = False
    ) -> tuple[str, httpx.Response | Exception, int]:
        """POST with retries until `deadline`; RETRY means the caller should spool and come back later.
        Also returns how many times the request was sent. `retry_conflict`: a 409 is the server losing a
        race on a unique key, and the request is idempotent: send it again."""
        attempt = 0
        data = body.encode()
        while True:
            try:
                response = self._client().post(api_path(path), content=data)
            except httpx.HTTPError as error:
                result: tuple[str, httpx.Response | Exception, int] = (_Outcome.RETRY, error, attempt + 1)
                wait = backoff_delay(attempt, cap=self.settings.max_backoff)
            else:
                status = response.status_code
                if status < 400:
                    return _Outcome.OK, response, attempt + 1
                if status in (408, 429) or status >= 500 or (status == 409 and retry_conflict):
                    result = (_Outcome.RETRY, response, attempt + 1)
                    wait = retry_after(response) or backoff_delay(attempt, cap=self.settings.max_backoff)
                else:
                    return _Outcome.REJECTED, response, attempt + 1
            if self._stopping or time.monotonic() + wait > deadline:
                return result
            time.sleep(wait)
            attempt += 1

    def _post_items(self, chunk: list[WireOp], deadline: float) -> bool:
        events = [op.text for op in chunk if op.type == EVENT]
        scores = [op.text for op in chunk if op.type == SCORE]
        finishes = [op for op in chunk if op.type == FINISH]
        finished = ",".join(op.text for op in finishes)
        body = f'{{"events":[{",".join(events)}],"scores":[{",".join(scores)}],"finishes":[{finished}]}}'
        outcome, result, tries = self._send("/ingest", body, deadline, retry_conflict=True)
        for op in finishes:
            op.attempts += tries
        if outcome == _Outcome.RETRY:
            log_once(
                "ingest-retry",
                logging.WARNING,
                "rollout: trace delivery failed (%s); will retry",
                _describe(result),
            )
            return False
        assert isinstance(result, httpx.Response)
        if outcome == _Outcome.OK:
            self._account(result, finishes)
            return True
        status = result.status_code
        if status in (413, 422) and len(chunk) > 1:
            # One bad or oversized item must not sink the batch: split until it is isolated.
            half = len(chunk) // 2
            return self._post_items(chunk[:half], deadline) and self._post_items(chunk[half:], deadline)
        self.stats["rejected"] += len(chunk) - len(finishes)
        error = _error_of(result, "/ingest")
        log_once(f"ingest-{status}", logging.ERROR, "rollout: the server refused trace data: %s", error)
        for op in finishes:
            self._settle(op, error=error)
        return True  # not retryable: drop it

    def _account(self, response: httpx.Response, finishes: list[WireOp]) -> None:
        try:
            result = response.json()
        except ValueError:
            result = {}
        items = list(result.get("events", [])) + list(result.get("scores", []))
        done = {"created": 0, "duplicate": 0, "rejected": 0}
        for item in items:
            status = item.get("status")
            if status in done:
                done[status] += 1
        self.stats["sent"] += done["created"]
        self.stats["duplicates"] += done["duplicate"]
        if done["rejected"]:
            self.stats["rejected"] += done["rejected"]
            for item in items:
                if item.get("status") == "rejected":
                    reason = str(item.get("error") or "rejected")
                    key = "rejected:" + ("finished" if "already" in reason else reason[:40])
                    log_once(key, logging.WARNING, "rollout: the server rejected trace data: %s", reason)
                    break
        answers = {item.get("index"): item for item in result.get("finishes", []) if isinstance(item, dict)}
        for index, op in enumerate(finishes):
            self._finished(op, answers.get(index))

    def _finished(self, op: WireOp, answer: dict[str, Any] | None) -> None:
        """The server's word on one finish: created, duplicate (it was already finished) or rejected."""
        status = (answer or {}).get("status", "created")  # a 2xx without the item still committed the batch
        if status == "created":
            self.stats["finished"] += 1
            self._settle(op)
        elif status == "duplicate" and op.attempts > 1:
            self.stats["finished"] += 1
            self._settle(op)  # our earlier try got through; its answer was lost
        elif status == "duplicate":
            error = api_error(
                409,
                {"title": "Conflict", "detail": f"Rollout {op.ref} is already finished; a rollout finishes once."},
                method="POST",
                path=api_path("/ingest"),
            )
            log_once("finish-409", logging.WARNING, "rollout: could not finish: %s", error)
            self._settle(op, error=error)
        else:
            reason = str((answer or {}).get("error") or f"no rollout {op.ref}")
            error = api_error(404, {"title": "Not found", "detail": reason}, method="POST", path=api_path("/ingest"))
            log_once("finish-rejected", logging.WARNING, "rollout: could not finish: %s", error)
            self._settle(op, error=error)

    def _post_run_finish(self, op: WireOp, deadline: float) -> bool:
        payload = json.loads(op.text)
        path = f"/runs/{payload['run']}/finish"
        outcome, result, tries = self._send(path, json.dumps(payload["body"]), deadline)
        op.attempts += tries
        if outcome == _Outcome.RETRY:
            log_once(
                "finish-retry",
                logging.WARNING,
                "rollout: finishing a run failed (%s); will retry",
                _describe(result),
            )
            return False
        assert isinstance(result, httpx.Response)
        if outcome == _Outcome.OK:
            self._settle(op, value=_json_or_none(result))
            return True
        if result.status_code == 409 and op.attempts > 1:
            self._settle(op, value=None)  # our earlier try got through; its answer was lost
            return True
        error = _error_of(result, path)
        log_once(f"finish-{result.status_code}", logging.WARNING, "rollout: could not finish a run: %s", error)
        self._settle(op, error=error)
        return True


def _json_or_none(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _error_of(response: httpx.Response, path: str) -> Exception:
    return api_error(
        response.status_code, _json_or_none(response), method="POST", path=api_path(path), text=response.text
    )


def _describe(result: Any) -> str:
    if isinstance(result, httpx.Response):
        return f"HTTP {result.status_code}"
    return f"{type(result).__name__}: {result}"


def _resolve(future: Future[Any] | None, *, value: Any = None, error: Exception | None = None) -> None:
    if future is None or future.done():
        return
    with contextlib.suppress(Exception):
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)


# -- process lifecycle: flush at exit, fresh state after fork --------------------------------------------

_senders: weakref.WeakSet[Sender] = weakref.WeakSet()


def _register(sender: Sender) -> None:
    _senders.add(sender)


def close_all(timeout: float | None = None) -> None:
    for sender in list(_senders):
        with contextlib.suppress(Exception):
            sender.close(timeout)


def _after_fork_in_child() -> None:
    for sender in list(_senders):
        sender._queue = deque()
        sender._thread = None
        sender._start_lock = threading.Lock()
        sender._drain_lock = threading.Lock()
        sender._idle = threading.Condition()
        sender._wake = threading.Event()
        sender._busy = False
        sender._flush_waiters = 0
        sender._segments_pending = 0
        sender._http = None
        sender._orphans = []
        sender._waiters = {}
        sender._waiters_lock = threading.Lock()
        sender._spool.forget_after_fork()


atexit.register(close_all)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


Factory = Callable[[], Sender]
