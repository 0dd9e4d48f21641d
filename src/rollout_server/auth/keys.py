"""API key secrets: high-entropy random strings, stored only as their SHA-256."""

from __future__ import annotations

import hashlib
import secrets

KEY_PREFIX = "rk_"


def generate_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def hash_key(secret: str) -> str:
    # A fast hash is right here: keys carry 256 random bits, so there is nothing to brute-force.
    return hashlib.sha256(secret.encode()).hexdigest()


def display_prefix(secret: str) -> str:
    return secret[:10]
