"""What a scorer sees and what it returns; shared by the built-ins, remote scorers and entry-point scorers."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson


class ScorerConfigError(ValueError):
    """A scorer's configuration is wrong; `field` names the offending key under `config`."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class ScorerFailure(RuntimeError):
    """A scorer could not score this rollout (missing expected output, endpoint down...)."""


@dataclass
class ScoringInput:
    """One finished rollout as a scorer reads it: plain JSON values, no database objects."""

    rollout: dict[str, Any]
    task: dict[str, Any] | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    run: dict[str, Any] = field(default_factory=dict)

    @property
    def output(self) -> Any:
        return self.rollout.get("output")

    def answer(self) -> Any:
        """The rollout's output, or — when it finished without one — the last assistant message's text."""
        if self.output is not None:
            return self.output
        for event in reversed(self.events):
            if event.get("kind") == "message" and event.get("role") == "assistant":
                return content_text(event.get("content"))
        return None

    def expected(self) -> Any:
        return (self.task or {}).get("expected_output")

    def to_json(self) -> dict[str, Any]:
        return {"rollout": self.rollout, "task": self.task, "events": self.events, "run": self.run}


@dataclass
class ScoreResult:
    name: str
    value: float | bool | str
    data_type: str | None = None
    comment: str | None = None


Scorer = Callable[[ScoringInput], list[ScoreResult]]


def content_text(content: Any) -> str:
    """Text of a message's content: a string, or the text parts of a list of content parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "".join(parts)
    if isinstance(content, dict) and isinstance(content.get("text"), str):
        return str(content["text"])
    return as_text(content)


def as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


_PATH_PART = re.compile(r"\[(\d+)\]|\[\"([^\"]*)\"\]|\['([^']*)'\]|([^.\[\]]+)")


def parse_path(path: str) -> list[str | int]:
    """`$.answer.items[0]`, `answer.items.0` and `$["a key"]` all work."""
    text = path.strip()
    if text.startswith("$"):
        text = text[1:]
    parts: list[str | int] = []
    for match in _PATH_PART.finditer(text):
        index, dq, sq, name = match.groups()
        if index is not None:
            parts.append(int(index))
        elif dq is not None or sq is not None:
            parts.append(dq if dq is not None else sq)  # type: ignore[arg-type]
        elif name is not None:
            parts.append(int(name) if name.isdigit() else name)
    return parts


_MISSING = object()


def at_path(value: Any, path: list[str | int]) -> Any:
    """The value at `path`, or the `MISSING` sentinel."""
    current = value
    for part in path:
        if isinstance(current, dict) and str(part) in current:
            current = current[str(part)]
        elif isinstance(current, list) and isinstance(part, int) and -len(current) <= part < len(current):
            current = current[part]
        else:
            return _MISSING
    return current


def is_missing(value: Any) -> bool:
    return value is _MISSING


def maybe_json(value: Any) -> Any:
    """A string that holds JSON becomes the parsed value; anything else is returned as is."""
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in ("{", "[", '"') or text in ("true", "false", "null") or _looks_numeric(text):
            try:
                return orjson.loads(text)
            except orjson.JSONDecodeError:
                return value
    return value


def _looks_numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
