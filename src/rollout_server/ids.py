"""Prefixed, time-sortable identifiers (`run_01j…`): 48 bits of milliseconds then 80 random bits, Crockford base32."""

from __future__ import annotations

import os
import threading
import time

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
_lock = threading.Lock()
_last_ms = 0
_last_rand = 0

PREFIXES = {"ws", "user", "key", "ds", "dsv", "task", "file", "run", "ro", "ev", "score", "job"}


def _encode(value: int, length: int) -> str:
    chars = []
    for _ in range(length):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def new_id(prefix: str) -> str:
    """Monotonic within a process, so IDs made in one millisecond still sort in creation order."""
    global _last_ms, _last_rand
    with _lock:
        ms = int(time.time() * 1000)
        if ms <= _last_ms:
            ms = _last_ms
            _last_rand += 1
        else:
            _last_ms = ms
            _last_rand = int.from_bytes(os.urandom(10), "big") >> 1
        rand = _last_rand
    return f"{prefix}_{_encode(ms, 10)}{_encode(rand & ((1 << 80) - 1), 16)}"


def has_prefix(value: str, prefix: str) -> bool:
    return value.startswith(prefix + "_")
