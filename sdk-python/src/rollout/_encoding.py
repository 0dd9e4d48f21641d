"""JSON encoding that never raises on user values, and snapshots of mutable payloads.

Events are serialised in the sender thread, but a caller may mutate a list after recording it (the
messages of an LLM call grow turn by turn). Containers are therefore encoded on the caller's thread
into `RawJSON` (one C-speed dumps), while strings and numbers are recorded as they are.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as _dt
import enum
import json
import uuid
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any


class RawJSON(str):
    """Already-encoded JSON text, spliced into the event as is."""

    __slots__ = ()


def _default(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump):  # pydantic v2 models, including OpenAI's response types
        try:
            return dump(mode="json")
        except Exception:
            pass
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, _dt.datetime | _dt.date | _dt.time):
        return value.isoformat()
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return {"_bytes_base64": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, uuid.UUID | PurePath):
        return str(value)
    if isinstance(value, Mapping):
        return dict(value)
    tolist = getattr(value, "tolist", None)  # numpy arrays and scalars
    if callable(tolist):
        try:
            return tolist()
        except Exception:
            pass
    return repr(value)


_encoder = json.JSONEncoder(default=_default, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def dumps(value: Any) -> str:
    """Encode anything; NaN/Infinity become null and unencodable objects their repr."""
    try:
        return _encoder.encode(value)
    except Exception:
        # NaN/Infinity or a circular reference: rebuild a clean copy, then encode that.
        try:
            return _encoder.encode(_sanitize(value, 0, set()))
        except Exception:
            return json.dumps(repr(value))


def _sanitize(value: Any, depth: int, active: set[int]) -> Any:
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else None
    if isinstance(value, str | int | bool) or value is None:
        return value
    if depth > 100 or id(value) in active:
        return "<cycle>"
    if not isinstance(value, dict | list | tuple):
        value = _default(value)
        if not isinstance(value, dict | list):
            return value
    active.add(id(value))
    try:
        if isinstance(value, dict):
            return {str(k): _sanitize(v, depth + 1, active) for k, v in value.items()}
        return [_sanitize(v, depth + 1, active) for v in value]
    finally:
        active.discard(id(value))


_PLAIN = (str, int, float, bool, type(None))


def snapshot(value: Any) -> Any:
    """Freeze a payload at call time: plain scalars pass through, anything else is encoded now."""
    if isinstance(value, _PLAIN):
        if isinstance(value, float) and value != value:  # NaN
            return None
        return value
    return RawJSON(dumps(value))


def encode_object(fields: dict[str, Any]) -> str:
    """Encode a flat dict whose values may be RawJSON, splicing those in unchanged."""
    for value in fields.values():
        if isinstance(value, RawJSON):
            break
    else:  # the common case: one C-level encode of the whole dict
        try:
            return _encoder.encode(fields)
        except Exception:
            pass
    parts = []
    for key, value in fields.items():
        if value is None:
            continue
        encoded = value if isinstance(value, RawJSON) else dumps(value)
        parts.append(f"{json.dumps(key)}:{encoded}")
    return "{" + ",".join(parts) + "}"
