"""Reading JSONL uploads: one JSON object per line, errors naming the line."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from ..errors import InvalidInput


def json_objects(lines: Iterable[bytes], label: str = "line") -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; a line that is not a JSON object is a 422 naming it."""
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError as error:
            raise InvalidInput(f"{label.capitalize()} {number} is not JSON: {error}.",
                               field=f"{label}.{number}") from error
        if not isinstance(value, dict):
            raise InvalidInput(f"{label.capitalize()} {number} is not a JSON object.", field=f"{label}.{number}")
        yield number, value
