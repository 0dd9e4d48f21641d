"""`wrap_openai(client)`: record each chat.completions / responses call as an `llm_call` event.

Only the object passed in is wrapped (a proxy; nothing is patched globally). Calls are recorded into
the attempt given to wrap_openai, else the attempt current in this thread or task (the one most
recently started there, or the one of the enclosing `with run.start_rollout(...)` block); with no
attempt the call goes through unrecorded. Streams are recorded when they end or are closed.
Recording problems are logged, never raised: the provider call behaves exactly as unwrapped.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Mapping
from typing import Any

from ._attempt import AttemptBase, _normalize_usage, current_attempt
from ._prices import Price, cost_of

log = logging.getLogger("rollout")

_NOT_PARAMS = {
    "messages",
    "input",
    "instructions",
    "tools",
    "stream",
    "stream_options",
    "extra_headers",
    "extra_query",
    "extra_body",
    "timeout",
    "model",
    "rollout_attempt",
}


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if obj is None:
        return default
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _dump(obj: Any) -> Any:
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        try:
            return dump(mode="json", exclude_none=True)
        except Exception:
            return dump()
    return obj


class _Config:
    def __init__(self, attempt: AttemptBase | None, prices: Mapping[str, Price] | None, name: str | None) -> None:
        self.attempt = attempt
        self.prices = dict(prices) if prices else None
        self.name = name

    def target(self, kwargs: dict[str, Any]) -> AttemptBase | None:
        explicit = kwargs.pop("rollout_attempt", None)
        attempt = explicit or self.attempt or current_attempt()
        if attempt is None or attempt.finished:
            return None
        return attempt

    def cost(self, model: str | None, usage: dict[str, int] | None) -> float | None:
        if not model or not usage:
            return None
        if self.prices:
            from ._prices import get_prices

            return cost_of(model, usage, {**get_prices(), **{k.lower(): v for k, v in self.prices.items()}})
        return cost_of(model, usage)


def _tool_names(tools: Any) -> list[str]:
    names = []
    for tool in tools or []:
        function = _get(tool, "function")
        name = _get(function, "name") or _get(tool, "name") or _get(tool, "type")
        if name:
            names.append(str(name))
    return names


def _request_metadata(api: str, kwargs: Mapping[str, Any], stream: bool) -> dict[str, Any]:
    meta: dict[str, Any] = {"provider": "openai", "api": api, "stream": stream}
    params = {
        k: v
        for k, v in kwargs.items()
        if k not in _NOT_PARAMS and v is not None and type(v).__name__ not in ("NotGiven", "Omit")
    }
    if params:
        meta["params"] = params
    tools = _tool_names(kwargs.get("tools"))
    if tools:
        meta["tools"] = tools
    return meta


def _record(
    config: _Config,
    attempt: AttemptBase,
    *,
    model: str | None,
    input: Any,
    output: Any,
    usage: Any,
    tool_calls: list[dict[str, Any]] | None,
    started: float,
    ended: float,
    metadata: dict[str, Any],
    error: BaseException | None = None,
) -> None:
    try:
        normalized = _normalize_usage(usage)
        if error is not None:
            metadata["error"] = f"{error.__class__.__name__}: {error}"
        attempt.llm_call(
            model=model,
            input=input,
            output=output,
            usage=normalized,
            cost=config.cost(model, normalized),
            tool_calls=tool_calls or None,
            started_at=started,
            ended_at=ended,
            name=config.name,
            metadata=metadata,
        )
    except Exception as problem:  # never break the provider call
        log.debug("rollout: could not record an OpenAI call: %r", problem)


# -- chat.completions -------------------------------------------------------------------------------------


def _chat_tool_calls(message: Any) -> list[dict[str, Any]]:
    calls = []
    for call in _get(message, "tool_calls") or []:
        function = _get(call, "function")
        calls.append(
            {
                "id": _get(call, "id"),
                "name": _get(function, "name") or _get(call, "name"),
                "arguments": _get(function, "arguments") or _get(call, "arguments"),
            }
        )
    return calls


def _chat_output(response: Any) -> tuple[Any, list[dict[str, Any]], dict[str, Any]]:
    choices = _get(response, "choices") or []
    extra: dict[str, Any] = {}
    if not choices:
        return None, [], extra
    message = _get(choices[0], "message")
    output = _dump(message)
    if isinstance(output, dict):
        output = {k: v for k, v in output.items() if v is not None}
    finish = _get(choices[0], "finish_reason")
    if finish:
        extra["finish_reason"] = finish
    if len(choices) > 1:
        extra["other_choices"] = [_dump(_get(c, "message")) for c in choices[1:]]
    return output, _chat_tool_calls(message), extra


class _ChatStreamState:
    def __init__(self) -> None:
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.role = "assistant"
        self.model: str | None = None
        self.usage: Any = None
        self.finish_reason: str | None = None
        self.first_token: float | None = None

    def add(self, chunk: Any) -> None:
        self.model = _get(chunk, "model") or self.model
        usage = _get(chunk, "usage")
        if usage:
            self.usage = usage
        for choice in _get(chunk, "choices") or []:
            if _get(choice, "index", 0) != 0:
                continue
            delta = _get(choice, "delta")
            if self.first_token is None:
                self.first_token = time.time()
            self.role = _get(delta, "role") or self.role
            text = _get(delta, "content")
            if text:
                self.content.append(text)
            thinking = _get(delta, "reasoning_content") or _get(delta, "reasoning")
            if isinstance(thinking, str):
                self.reasoning.append(thinking)
            for call in _get(delta, "tool_calls") or []:
                slot = self.calls.setdefault(
                    _get(call, "index", len(self.calls)), {"id": None, "name": "", "arguments": ""}
                )
                slot["id"] = _get(call, "id") or slot["id"]
                function = _get(call, "function")
                if _get(function, "name"):
                    slot["name"] += _get(function, "name")
                if _get(function, "arguments"):
                    slot["arguments"] += _get(function, "arguments")
            self.finish_reason = _get(choice, "finish_reason") or self.finish_reason

    def output(self) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        calls = [self.calls[i] for i in sorted(self.calls)]
        message: dict[str, Any] = {
            "role": self.role,
            "content": "".join(self.content) if self.content else None,
        }
        if calls:
            message["tool_calls"] = [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {"name": c["name"], "arguments": c["arguments"]},
                }
                for c in calls
            ]
        if self.reasoning:
            message["reasoning_content"] = "".join(self.reasoning)
        return message, calls


# -- responses --------------------------------------------------------------------------------------------


def _responses_input(kwargs: Mapping[str, Any]) -> Any:
    given = kwargs.get("input")
    instructions = kwargs.get("instructions")
    messages: list[Any] = []
    if isinstance(instructions, str):
        messages.append({"role": "developer", "content": instructions})
    if isinstance(given, str):
        messages.append({"role": "user", "content": given})
    elif given is not None and type(given).__name__ not in ("NotGiven", "Omit"):
        messages.extend(list(given))
    return messages


def _responses_output(response: Any) -> tuple[Any, list[dict[str, Any]], dict[str, Any]]:
    items = _get(response, "output") or []
    dumped = [_dump(item) for item in items]
    calls = []
    for item in items:
        if _get(item, "type") in ("function_call", "custom_tool_call"):
            calls.append(
                {
                    "id": _get(item, "call_id") or _get(item, "id"),
                    "name": _get(item, "name"),
                    "arguments": _get(item, "arguments")
                    if _get(item, "arguments") is not None
                    else _get(item, "input"),
                }
            )
    extra: dict[str, Any] = {}
    status = _get(response, "status")
    if status:
        extra["status"] = status
    response_id = _get(response, "id")
    if response_id:
        extra["response_id"] = response_id
    return dumped, calls, extra


class _ResponsesStreamState:
    def __init__(self) -> None:
        self.final: Any = None
        self.text: list[str] = []
        self.model: str | None = None
        self.first_token: float | None = None

    def add(self, event: Any) -> None:
        kind = _get(event, "type") or ""
        if self.first_token is None and kind not in ("response.created", "response.in_progress", "response.queued"):
            self.first_token = time.time()  # the first output the caller could act on
        if kind == "response.output_text.delta":
            self.text.append(_get(event, "delta") or "")
        response = _get(event, "response")
        if response is not None:
            self.model = _get(response, "model") or self.model
            if kind in ("response.completed", "response.failed", "response.incomplete"):
                self.final = response


# -- proxies ----------------------------------------------------------------------------------------------


class _Proxy:
    def __init__(self, target: Any, config: _Config) -> None:
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_config", config)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._target, name, value)

    def __repr__(self) -> str:
        return f"<rollout-wrapped {self._target!r}>"


def _is_async(resource: Any) -> bool:
    create = getattr(resource, "create", None)
    return type(resource).__name__.startswith("Async") or inspect.iscoroutinefunction(
        inspect.unwrap(create) if create else None
    )


class _Endpoint(_Proxy):
    """chat.completions or responses: create() and parse() recorded, everything else passed through."""

    api = ""

    def create(self, *args: Any, **kwargs: Any) -> Any:
        return self._call(self._target.create, args, kwargs)

    def parse(self, *args: Any, **kwargs: Any) -> Any:
        return self._call(self._target.parse, args, kwargs)

    def _call(self, method: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        attempt = self._config.target(kwargs)
        if attempt is None:
            return method(*args, **kwargs)
        if _is_async(self._target):
            return self._call_async(method, attempt, args, kwargs)
        started = time.time()
        try:
            result = method(*args, **kwargs)
        except BaseException as error:
            self._failed(attempt, kwargs, started, error)
            raise
        return self._handle(attempt, kwargs, started, result)

    async def _call_async(
        self, method: Any, attempt: AttemptBase, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        started = time.time()
        try:
            result = await method(*args, **kwargs)
        except BaseException as error:
            self._failed(attempt, kwargs, started, error)
            raise
        return self._handle(attempt, kwargs, started, result)

    def _input(self, kwargs: Mapping[str, Any]) -> Any:
        raise NotImplementedError

    def _failed(self, attempt: AttemptBase, kwargs: dict[str, Any], started: float, error: BaseException) -> None:
        try:
            self._record_failure(attempt, kwargs, started, error)
        except Exception as problem:
            log.debug("rollout: could not record a failed OpenAI call: %r", problem)

    def _record_failure(
        self, attempt: AttemptBase, kwargs: dict[str, Any], started: float, error: BaseException
    ) -> None:
        _record(
            self._config,
            attempt,
            model=kwargs.get("model"),
            input=self._input(kwargs),
            output=None,
            usage=None,
            tool_calls=None,
            started=started,
            ended=time.time(),
            metadata=_request_metadata(self.api, kwargs, bool(kwargs.get("stream"))),
            error=error,
        )

    def _handle(self, attempt: AttemptBase, kwargs: dict[str, Any], started: float, result: Any) -> Any:
        if kwargs.get("stream"):
            if hasattr(result, "__aiter__"):
                return _AsyncRecordingStream(result, self, attempt, kwargs, started)
            if hasattr(result, "__iter__"):
                return _RecordingStream(result, self, attempt, kwargs, started)
        ended = time.time()
        try:
            output, calls, extra = self._output(result)
            meta = {**_request_metadata(self.api, kwargs, False), **extra}
            _record(
                self._config,
                attempt,
                model=_get(result, "model") or kwargs.get("model"),
                input=self._input(kwargs),
                output=output,
                usage=_get(result, "usage"),
                tool_calls=calls,
                started=started,
                ended=ended,
                metadata=meta,
            )
        except Exception as problem:  # the caller gets its response whatever happens here
            log.debug("rollout: could not record an OpenAI call: %r", problem)
        return result

    def _output(self, result: Any) -> tuple[Any, list[dict[str, Any]], dict[str, Any]]:
        raise NotImplementedError

    def _new_state(self) -> Any:
        raise NotImplementedError

    def _finish_stream(
        self,
        state: Any,
        attempt: AttemptBase,
        kwargs: dict[str, Any],
        started: float,
        error: BaseException | None,
    ) -> None:
        raise NotImplementedError


class _ChatCompletions(_Endpoint):
    api = "chat.completions"

    def _input(self, kwargs: Mapping[str, Any]) -> Any:
        return kwargs.get("messages")

    def _output(self, result: Any) -> tuple[Any, list[dict[str, Any]], dict[str, Any]]:
        return _chat_output(result)

    def _new_state(self) -> _ChatStreamState:
        return _ChatStreamState()

    def _finish_stream(
        self,
        state: _ChatStreamState,
        attempt: AttemptBase,
        kwargs: dict[str, Any],
        started: float,
        error: BaseException | None,
    ) -> None:
        message, calls = state.output()
        meta = _request_metadata(self.api, kwargs, True)
        if state.finish_reason:
            meta["finish_reason"] = state.finish_reason
        if state.first_token is not None:
            meta["time_to_first_token_ms"] = round((state.first_token - started) * 1000, 3)
        _record(
            self._config,
            attempt,
            model=state.model or kwargs.get("model"),
            input=self._input(kwargs),
            output=message,
            usage=state.usage,
            tool_calls=calls,
            started=started,
            ended=time.time(),
            metadata=meta,
            error=error,
        )


class _Responses(_Endpoint):
    api = "responses"

    def _input(self, kwargs: Mapping[str, Any]) -> Any:
        return _responses_input(kwargs)

    def _output(self, result: Any) -> tuple[Any, list[dict[str, Any]], dict[str, Any]]:
        return _responses_output(result)

    def _new_state(self) -> _ResponsesStreamState:
        return _ResponsesStreamState()

    def _finish_stream(
        self,
        state: _ResponsesStreamState,
        attempt: AttemptBase,
        kwargs: dict[str, Any],
        started: float,
        error: BaseException | None,
    ) -> None:
        meta = _request_metadata(self.api, kwargs, True)
        if state.first_token is not None:
            meta["time_to_first_token_ms"] = round((state.first_token - started) * 1000, 3)
        if state.final is not None:
            output, calls, extra = _responses_output(state.final)
            meta.update(extra)
            usage = _get(state.final, "usage")
        else:
            output = (
                [
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": "".join(state.text)}],
                    }
                ]
                if state.text
                else None
            )
            calls, usage = [], None
        _record(
            self._config,
            attempt,
            model=state.model or kwargs.get("model"),
            input=self._input(kwargs),
            output=output,
            usage=usage,
            tool_calls=calls,
            started=started,
            ended=time.time(),
            metadata=meta,
            error=error,
        )


class _RecordingStream:
    """Iterates the provider's stream unchanged and records the call once it ends or is closed."""

    def __init__(
        self, stream: Any, endpoint: _Endpoint, attempt: AttemptBase, kwargs: dict[str, Any], started: float
    ) -> None:
        self._stream = stream
        self._endpoint = endpoint
        self._attempt = attempt
        self._kwargs = kwargs
        self._started = started
        self._state = endpoint._new_state()
        self._recorded = False
        self._iterator: Any = None

    def _done(self, error: BaseException | None = None) -> None:
        if not self._recorded:
            self._recorded = True
            try:
                self._endpoint._finish_stream(self._state, self._attempt, self._kwargs, self._started, error)
            except Exception as problem:
                log.debug("rollout: could not record an OpenAI stream: %r", problem)

    def __iter__(self) -> Any:
        return self

    def __next__(self) -> Any:
        if self._iterator is None:
            self._iterator = iter(self._stream)
        try:
            item = next(self._iterator)
        except StopIteration:
            self._done()
            raise
        except BaseException as error:
            self._done(error)
            raise
        try:
            self._state.add(item)
        except Exception as problem:
            log.debug("rollout: could not read a stream chunk: %r", problem)
        return item

    def __enter__(self) -> _RecordingStream:
        enter = getattr(self._stream, "__enter__", None)
        if enter is not None:
            enter()
        return self

    def __exit__(self, *exc: Any) -> Any:
        self._done(exc[1] if len(exc) > 1 else None)
        exit_ = getattr(self._stream, "__exit__", None)
        return exit_(*exc) if exit_ is not None else None

    def close(self) -> None:
        self._done()
        close = getattr(self._stream, "close", None)
        if close is not None:
            close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _AsyncRecordingStream:
    def __init__(
        self, stream: Any, endpoint: _Endpoint, attempt: AttemptBase, kwargs: dict[str, Any], started: float
    ) -> None:
        self._stream = stream
        self._endpoint = endpoint
        self._attempt = attempt
        self._kwargs = kwargs
        self._started = started
        self._state = endpoint._new_state()
        self._recorded = False
        self._iterator: Any = None

    def _done(self, error: BaseException | None = None) -> None:
        if not self._recorded:
            self._recorded = True
            try:
                self._endpoint._finish_stream(self._state, self._attempt, self._kwargs, self._started, error)
            except Exception as problem:
                log.debug("rollout: could not record an OpenAI stream: %r", problem)

    def __aiter__(self) -> _AsyncRecordingStream:
        return self

    async def __anext__(self) -> Any:
        if self._iterator is None:
            self._iterator = self._stream.__aiter__()
        try:
            item = await self._iterator.__anext__()
        except StopAsyncIteration:
            self._done()
            raise
        except BaseException as error:
            self._done(error)
            raise
        try:
            self._state.add(item)
        except Exception as problem:
            log.debug("rollout: could not read a stream chunk: %r", problem)
        return item

    async def __aenter__(self) -> _AsyncRecordingStream:
        enter = getattr(self._stream, "__aenter__", None)
        if enter is not None:
            await enter()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        self._done(exc[1] if len(exc) > 1 else None)
        exit_ = getattr(self._stream, "__aexit__", None)
        return await exit_(*exc) if exit_ is not None else None

    async def close(self) -> None:
        self._done()
        close = getattr(self._stream, "close", None)
        if close is not None:
            result = close()
            if inspect.isawaitable(result):
                await result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _Chat(_Proxy):
    @property
    def completions(self) -> _ChatCompletions:
        return _ChatCompletions(self._target.completions, self._config)


class _Client(_Proxy):
    @property
    def chat(self) -> _Chat:
        return _Chat(self._target.chat, self._config)

    @property
    def responses(self) -> _Responses:
        return _Responses(self._target.responses, self._config)

    def with_options(self, *args: Any, **kwargs: Any) -> _Client:
        return _Client(self._target.with_options(*args, **kwargs), self._config)

    def copy(self, *args: Any, **kwargs: Any) -> _Client:
        return _Client(self._target.copy(*args, **kwargs), self._config)


def wrap_openai(
    client: Any,
    *,
    attempt: AttemptBase | None = None,
    prices: Mapping[str, Price] | None = None,
    name: str | None = None,
) -> Any:
    """Return a wrapper of an `openai.OpenAI` / `openai.AsyncOpenAI` client (or a compatible one) whose
    chat.completions.create/parse and responses.create/parse calls, streaming or not, are recorded as
    llm_call events. `attempt`: always record into this attempt (default: the current one; a call can
    also pass `rollout_attempt=`). `prices`: per-million-token prices overriding the table."""
    if isinstance(client, _Client):
        client = client._target
    return _Client(client, _Config(attempt, prices, name))
