"""Opaque keyset cursors: the last row's sort key, base64url-encoded JSON, checked on the way back in."""

from __future__ import annotations

import base64
from datetime import datetime
from typing import Any

import orjson

from ..errors import InvalidInput

DEFAULT_LIMIT = 50
MAX_LIMIT = 1000

# Each cursor position is declared as one of these; `datetime` values travel as ISO strings.
CursorType = type[str] | type[int] | type[datetime]


def encode_cursor(*values: Any) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(list(values))).decode().rstrip("=")


def _bad_cursor() -> InvalidInput:
    return InvalidInput("The cursor is not one this endpoint issued; pass next_cursor back unchanged.", field="cursor")


def _convert(value: Any, kind: CursorType) -> Any:
    if kind is datetime:
        if not isinstance(value, str):
            raise _bad_cursor()
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            raise _bad_cursor() from None
    if kind is int:
        if not isinstance(value, int) or isinstance(value, bool) or not -(2**63) <= value < 2**63:
            raise _bad_cursor()
        return value
    if not isinstance(value, str) or "\x00" in value:
        raise _bad_cursor()
    return value


def decode_cursor(cursor: str | None, shape: int | tuple[CursorType, ...]) -> list[Any] | None:
    """Decode a cursor of the given shape: a tuple of types (checked and converted), or just an arity."""
    if not cursor:
        return None
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        values = orjson.loads(base64.urlsafe_b64decode(padded))
    except Exception:
        values = None
    arity = shape if isinstance(shape, int) else len(shape)
    if not isinstance(values, list) or len(values) != arity:
        raise _bad_cursor()
    if isinstance(shape, int):
        return values
    return [_convert(value, kind) for value, kind in zip(values, shape, strict=True)]
