"""Recording a rollout's trace: the event methods shared by the sync and async attempt objects.

Every method builds a small dict and appends it to the sender's queue: no I/O, no validation round
trip, no exception for telemetry problems. `seq` is assigned here, per attempt, so the server keeps
the order the caller saw whatever batch or retry an event travels in.
"""

from __future__ import annotations

import contextvars
import datetime as _dt
import itertools
import logging
import secrets
import time
import traceback
from collections.abc import Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, NamedTuple

from ._encoding import snapshot
from ._prices import cost_of
from ._sender import log_once
from ._spool import EVENT, FINISH, SCORE
from ._types import Rollout, RunTask, Task

if TYPE_CHECKING:
    from ._sender import Sender

log = logging.getLogger("rollout")


class _SpanFrame(NamedTuple):
    attempt_id: str
    span_id: str
    outer: _SpanFrame | None


_current_span: contextvars.ContextVar[_SpanFrame | None] = contextvars.ContextVar("rollout_span", default=None)
_current_attempt: contextvars.ContextVar[AttemptBase | None] = contextvars.ContextVar("rollout_attempt", default=None)


def current_attempt() -> AttemptBase | None:
    """The attempt started most recently in this thread or task (what `wrap_openai` records into)."""
    return _current_attempt.get()


def _timestamp(value: Any) -> Any:
    """Epoch seconds or datetime in; epoch float (converted off-thread) or the aware datetime out."""
    if value is None or isinstance(value, float):
        return value
    if isinstance(value, int):
        return float(value)
    if isinstance(value, _dt.datetime):
        return value if value.tzinfo else value.replace(tzinfo=_dt.UTC)
    return None


class AttemptBase:
    """One attempt at one task (a rollout). Create with `run.start_rollout(task)`."""

    def __init__(self, sender: Sender, info: Rollout, task: RunTask | None = None) -> None:
        self.info = info
        self.id: str = info.id
        self.attempt: int = info.attempt
        self.url: str = info.url
        self.run_number: int = info.run_number
        self.run_item = task
        self._sender = sender
        self._enqueue = sender.enqueue
        self._seq = itertools.count(1)
        self._score_seq = itertools.count(1)
        self._prefix = f"ev_{secrets.token_hex(5)}_"
        self._finished = False
        self._context_token: contextvars.Token[AttemptBase | None] | None = None

    @property
    def task(self) -> Task | None:
        """The task being attempted (None for an ad-hoc rollout)."""
        return self.run_item.task if self.run_item is not None else None

    @property
    def repeat_index(self) -> int:
        return self.info.repeat_index

    @property
    def finished(self) -> bool:
        return self._finished

    def __repr__(self) -> str:
        return f"<Attempt run {self.run_number} / attempt {self.attempt} {self.id}>"

    # -- the trace -------------------------------------------------------------------------------------

    def _parent(self) -> str | None:
        frame = _current_span.get()
        while frame is not None:
            if frame.attempt_id == self.id:
                return frame.span_id
            frame = frame.outer
        return None

    def _emit(
        self,
        kind: str,
        event: dict[str, Any],
        parent_id: str | None,
        metadata: Any,
        event_id: str | None = None,
        seq: int | None = None,
    ) -> str:
        if self._finished:
            log_once(
                "after-finish",
                logging.WARNING,
                "rollout: an event was recorded after its attempt finished; it is ignored "
                "(record everything before finish())",
            )
            return ""
        if seq is None:
            seq = next(self._seq)
        eid = event_id or f"{self._prefix}{seq}"
        event["id"] = eid
        event["kind"] = kind
        event["seq"] = seq
        parent = parent_id or self._parent()
        if parent:
            event["parent_id"] = parent
        if metadata:
            event["metadata"] = snapshot(metadata)
        if "started_at" not in event:
            event["started_at"] = time.time()
        self._enqueue((EVENT, self.id, event))
        return eid

    def message(
        self,
        content: Any,
        role: str = "assistant",
        *,
        name: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        parent_id: str | None = None,
    ) -> str:
        """A conversation message (role: system, developer, user, assistant or tool). Returns the event id."""
        event: dict[str, Any] = {"role": role, "content": snapshot(content)}
        if name:
            event["name"] = name
        return self._emit("message", event, parent_id, metadata)

    def reasoning(
        self, content: Any, *, metadata: Mapping[str, Any] | None = None, parent_id: str | None = None
    ) -> str:
        """The model's (or agent's) reasoning text."""
        return self._emit("reasoning", {"content": snapshot(content)}, parent_id, metadata)

    def log(
        self,
        message: Any,
        level: str = "info",
        *,
        metadata: Mapping[str, Any] | None = None,
        parent_id: str | None = None,
    ) -> str:
        """A free-form log line in the trace."""
        return self._emit("log", {"message": snapshot(message), "level": level}, parent_id, metadata)

    def error(
        self,
        message: Any,
        *,
        type: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        parent_id: str | None = None,
    ) -> str:
        """An error in the trace (does not finish the attempt). Accepts a message or an exception."""
        event: dict[str, Any] = {}
        if isinstance(message, BaseException):
            event["type"] = type or message.__class__.__name__
            event["message"] = str(message) or message.__class__.__name__
            if message.__traceback__ is not None:
                event["traceback"] = "".join(traceback.format_exception(message))[-20_000:]
        else:
            event["message"] = snapshot(message)
            if type:
                event["type"] = type
        return self._emit("error", event, parent_id, metadata)

    def llm_call(
        self,
        model: str | None = None,
        input: Any = None,
        output: Any = None,
        *,
        usage: Mapping[str, Any] | None = None,
        cost: float | None = None,
        tool_calls: Any = None,
        started_at: Any = None,
        ended_at: Any = None,
        latency_ms: float | None = None,
        name: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        parent_id: str | None = None,
        **extra: Any,
    ) -> str:
        """One model call: input messages, output, usage (input/output/total tokens), cost, tool calls.
        Cost is looked up in the price table when not given and the model and usage are known."""
        end = _timestamp(ended_at) if ended_at is not None else time.time()
        start = _timestamp(started_at)
        if start is None and latency_ms is not None and isinstance(end, float):
            start = end - latency_ms / 1000.0
        event: dict[str, Any] = {"started_at": start if start is not None else end, "ended_at": end}
        if model:
            event["model"] = model
        if name:
            event["name"] = name
        if input is not None:
            event["input"] = snapshot(input)
        if output is not None:
            event["output"] = snapshot(output)
        try:
            normalized = _normalize_usage(usage)
            if cost is None and model and normalized:
                cost = cost_of(model, normalized)
            if normalized:
                event["usage"] = normalized
            if cost is not None:
                event["cost"] = float(cost)
        except Exception as error:  # an odd usage object must not break the agent
            log_once("usage", logging.WARNING, "rollout: could not read an llm_call's usage or cost: %r", error)
        if tool_calls:
            event["tool_calls"] = snapshot(tool_calls)
        for key, value in extra.items():
            if key not in event and key not in ("id", "kind", "seq", "rollout_id"):
                event[key] = snapshot(value)
        return self._emit("llm_call", event, parent_id, metadata)

    def tool_call(
        self,
        name: str,
        arguments: Any = None,
        *,
        call_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        parent_id: str | None = None,
    ) -> ToolCall:
        """Record a tool call now; call `.result(output)` or `.error(message)` on the handle when it returns
        (or use it as a context manager: an escaping exception is recorded as the tool's error)."""
        parent = parent_id or self._parent()
        started = time.time()
        seq = next(self._seq)
        cid = call_id or f"call_{self._prefix[3:]}{seq}"
        event_id = self._emit(
            "tool_call",
            {"name": name, "arguments": snapshot(arguments), "call_id": cid, "started_at": started},
            parent,
            metadata,
            seq=seq,
        )
        return ToolCall(self, name, cid, event_id, parent, started)

    def tool_result(
        self,
        call_id: str,
        output: Any,
        *,
        is_error: bool = False,
        name: str | None = None,
        started_at: Any = None,
        metadata: Mapping[str, Any] | None = None,
        parent_id: str | None = None,
    ) -> str:
        """The result of a tool call recorded earlier (or outside the SDK), paired by call_id."""
        event: dict[str, Any] = {
            "call_id": call_id,
            "output": snapshot(output),
            "is_error": is_error,
            "ended_at": time.time(),
        }
        start = _timestamp(started_at)
        if start is not None:
            event["started_at"] = start
        if name:
            event["name"] = name
        return self._emit("tool_result", event, parent_id, metadata)

    def span(self, name: str, *, metadata: Mapping[str, Any] | None = None, parent_id: str | None = None) -> Span:
        """A named interval; events recorded inside `with attempt.span(name):` nest under it."""
        return Span(self, name, metadata, parent_id)

    def event(
        self,
        kind: str,
        *,
        parent_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        **fields: Any,
    ) -> str:
        """Any event kind with its body fields as keyword arguments (escape hatch for new kinds)."""
        event = {k: (v if k in ("started_at", "ended_at") else snapshot(v)) for k, v in fields.items()}
        for key in ("started_at", "ended_at"):
            if key in event:
                event[key] = _timestamp(event[key])
        return self._emit(kind, event, parent_id, metadata)

    def score(
        self,
        name: str,
        value: float | bool | str,
        *,
        comment: str | None = None,
        data_type: str | None = None,
        source: str = "sdk",
        author: str | None = None,
    ) -> None:
        """A named score (number, boolean, category or text). The run's reward score sets the reward.
        Allowed before and after finish()."""
        # A client id makes a re-sent score (after a lost answer, or from the spool) count once.
        score: dict[str, Any] = {
            "id": f"sc{self._prefix[2:]}{next(self._score_seq)}",
            "name": name,
            "value": value,
            "source": source,
        }
        if comment is not None:
            score["comment"] = comment
        if data_type is not None:
            score["data_type"] = data_type
        if author is not None:
            score["author"] = author
        self._enqueue((SCORE, self.id, score))

    # -- finishing -------------------------------------------------------------------------------------

    def _finish_op(
        self, output: Any, status: str | None, error: Any, metadata: Any, future: Any
    ) -> tuple[Any, ...] | None:
        if self._finished:
            log_once("double-finish", logging.WARNING, "rollout: finish() called twice on %s; ignored", self.id)
            return None
        body: dict[str, Any] = {}
        if status is not None:
            body["status"] = status
        if output is not None:
            body["output"] = snapshot(output)
        if error is not None:
            body["error"] = str(error) if not isinstance(error, str) else error
        if metadata:
            body["metadata"] = snapshot(metadata)
        # The attempt ended now, not when the batch carrying its finish reaches the server.
        body["ended_at"] = time.time()
        self._finished = True
        if _current_attempt.get() is self:
            _current_attempt.set(None)
        return (FINISH, self.id, body, future)

    def _exit_args(self, exc: BaseException | None) -> dict[str, Any]:
        if exc is None:
            return {}
        self.error(exc)
        message = f"{exc.__class__.__name__}: {exc}" if str(exc) else exc.__class__.__name__
        # Ctrl-C and task cancellation stop the attempt; they say nothing about the agent's answer.
        interrupted = isinstance(exc, KeyboardInterrupt) or exc.__class__.__name__ == "CancelledError"
        return {"status": "cancelled" if interrupted else "failed", "error": message}

    def _activate(self) -> None:
        self._context_token = _current_attempt.set(self)

    def _deactivate(self) -> None:
        token, self._context_token = self._context_token, None
        if token is not None:
            try:
                _current_attempt.reset(token)
            except ValueError:  # exited in another context
                _current_attempt.set(None)
        if self._finished and _current_attempt.get() is self:
            _current_attempt.set(None)


def _normalize_usage(usage: Any) -> dict[str, int] | None:
    if not usage:
        return None
    if not isinstance(usage, Mapping):
        dump = getattr(usage, "model_dump", None)
        usage = dump() if callable(dump) else getattr(usage, "__dict__", {})
    if not isinstance(usage, Mapping):
        return None

    def number(*names: str) -> int | None:
        for key in names:
            value = usage.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                return int(value)
        return None

    out: dict[str, int] = {}
    tokens_in = number("input_tokens", "prompt_tokens")
    tokens_out = number("output_tokens", "completion_tokens")
    total = number("total_tokens")
    if tokens_in is not None:
        out["input_tokens"] = tokens_in
    if tokens_out is not None:
        out["output_tokens"] = tokens_out
    if total is None and (tokens_in is not None or tokens_out is not None):
        total = (tokens_in or 0) + (tokens_out or 0)
    if total is not None:
        out["total_tokens"] = total
    for key in ("cached_tokens", "reasoning_tokens"):
        value = number(key)
        if value is not None:
            out[key] = value
    details_in = usage.get("input_tokens_details") or usage.get("prompt_tokens_details")
    if isinstance(details_in, Mapping) and isinstance(details_in.get("cached_tokens"), int):
        out["cached_tokens"] = details_in["cached_tokens"]
    details_out = usage.get("output_tokens_details") or usage.get("completion_tokens_details")
    if isinstance(details_out, Mapping) and isinstance(details_out.get("reasoning_tokens"), int):
        out["reasoning_tokens"] = details_out["reasoning_tokens"]
    return out


class ToolCall:
    """Handle for a recorded tool call; `.result()` records the paired tool_result with its latency."""

    def __init__(
        self,
        attempt: AttemptBase,
        name: str,
        call_id: str,
        event_id: str,
        parent_id: str | None,
        started: float,
    ) -> None:
        self.attempt = attempt
        self.name = name
        self.call_id = call_id
        self.id = event_id
        self._parent = parent_id
        self._started = started
        self._done = False

    def result(self, output: Any, *, is_error: bool = False, metadata: Mapping[str, Any] | None = None) -> str:
        """Record what the tool returned."""
        if self._done:
            log_once("tool-twice", logging.WARNING, "rollout: a tool call's result was recorded twice; ignored")
            return ""
        self._done = True
        return self.attempt.tool_result(
            self.call_id,
            output,
            is_error=is_error,
            name=self.name,
            started_at=self._started,
            metadata=metadata,
            parent_id=self._parent,
        )

    def error(self, message: Any, *, metadata: Mapping[str, Any] | None = None) -> str:
        """Record that the tool failed (a tool_result with is_error=true)."""
        text = f"{message.__class__.__name__}: {message}" if isinstance(message, BaseException) else message
        return self.result(text, is_error=True, metadata=metadata)

    def __enter__(self) -> ToolCall:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if not self._done:
            if exc is not None:
                self.error(exc)
            else:
                self.result(None)


class Span:
    """A named interval. Its event is sent when it closes, with the seq it got when it opened, so it
    sorts before the events nested in it."""

    def __init__(self, attempt: AttemptBase, name: str, metadata: Any, parent_id: str | None) -> None:
        self.attempt = attempt
        self.name = name
        self.metadata = dict(metadata) if metadata else None
        self._explicit_parent = parent_id
        self.id = ""
        self._seq: int | None = None
        self._started = 0.0
        self._token: contextvars.Token[_SpanFrame | None] | None = None
        self._parent: str | None = None

    def __enter__(self) -> Span:
        attempt = self.attempt
        self._parent = self._explicit_parent or attempt._parent()
        self._seq = next(attempt._seq)
        self.id = f"{attempt._prefix}{self._seq}"
        self._started = time.time()
        self._token = _current_span.set(_SpanFrame(attempt.id, self.id, _current_span.get()))
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._token is not None:
            try:
                _current_span.reset(self._token)
            except ValueError:
                _current_span.set(None)
        metadata = dict(self.metadata or {})
        if exc is not None:
            metadata["error"] = f"{exc.__class__.__name__}: {exc}"
        self.attempt._emit(
            "span",
            {"name": self.name, "started_at": self._started, "ended_at": time.time()},
            self._parent,
            metadata or None,
            event_id=self.id,
            seq=self._seq,
        )

    async def __aenter__(self) -> Span:
        return self.__enter__()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.__exit__(exc_type, exc, tb)
