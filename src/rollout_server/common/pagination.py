"""Opaque keyset cursors: the last row's sort key, base64url-encoded JSON."""

from __future__ import annotations

import base64
from typing import Any

import orjson

from ..errors import InvalidInput

DEFAULT_LIMIT = 50
MAX_LIMIT = 1000


def encode_cursor(*values: Any) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(list(values))).decode().rstrip("=")


def decode_cursor(cursor: str | None, arity: int) -> list[Any] | None:
    if not cursor:
        return None
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        values = orjson.loads(base64.urlsafe_b64decode(padded))
    except Exception:
        values = None
    if not isinstance(values, list) or len(values) != arity:
        raise InvalidInput("The cursor is not one this endpoint issued; pass next_cursor back unchanged.",
                           field="cursor")
    return values
