"""A small TOML writer for task.toml and dataset.toml (the standard library only reads TOML).

Values TOML cannot hold (null, integers beyond 64 bits) raise `NotToml`, and the caller falls back to JSON.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


class NotToml(ValueError):
    pass


def key(name: str) -> str:
    return name if _BARE.match(name) else string(name)


def string(text: str) -> str:
    # JSON escapes are valid TOML basic-string escapes; TOML also forbids a raw DEL.
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def value(item: Any) -> str:
    if isinstance(item, bool):
        return "true" if item else "false"
    if isinstance(item, int):
        if not -(2**63) <= item < 2**63:
            raise NotToml("integer out of range")
        return str(item)
    if isinstance(item, float):
        if math.isnan(item):
            return "nan"
        if math.isinf(item):
            return "inf" if item > 0 else "-inf"
        return repr(item)
    if isinstance(item, str):
        return string(item)
    if isinstance(item, list):
        return "[" + ", ".join(value(v) for v in item) + "]"
    if isinstance(item, dict):
        return "{" + ", ".join(f"{key(str(k))} = {value(v)}" for k, v in item.items()) + "}"
    raise NotToml(f"{type(item).__name__} has no TOML form")


def table(name: str, values: dict[str, Any]) -> str:
    lines = [f"[{key(name)}]"] if name else []
    lines.extend(f"{key(str(k))} = {value(v)}" for k, v in values.items())
    return "\n".join(lines) + "\n"
