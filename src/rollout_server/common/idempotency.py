"""Client-chosen idempotency keys (`client_key`) on starts: a retry returns what the first request made.

The first request's fields are kept as a digest, so the same key sent with a different request is refused
(409 `idempotency-key-reused`) instead of silently answering with an object the caller did not ask for.
Two requests with one key at the same moment: the second's insert meets the unique constraint inside a
savepoint, which is rolled back, and it answers with the first's object.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Protocol, TypeVar

import orjson
from pydantic import BaseModel
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ..errors import IdempotencyKeyReused


class Keyed(Protocol):
    client_key: str | None
    request_digest: str | None


K = TypeVar("K", bound=Keyed)


def request_digest(body: BaseModel) -> str:
    """SHA-256 of the request's fields (defaults filled in) other than the key itself."""
    fields = body.model_dump(mode="json", exclude={"client_key"})
    return hashlib.sha256(orjson.dumps(fields, option=orjson.OPT_SORT_KEYS)).hexdigest()


def replay(existing: K, digest: str) -> K:
    """The object a key made before, if this request is the same one; else 409."""
    if existing.request_digest is not None and existing.request_digest != digest:
        raise IdempotencyKeyReused(
            f"client_key {existing.client_key!r} was first used with a different request; use a new key for a "
            "new object, or resend the first request unchanged.",
            errors=[{"field": "client_key", "message": "already used with different fields"}],
        )
    return existing


def create_once(session: Session, create: Callable[[], K], find: Callable[[], K | None], digest: str) -> K:
    """`create()` in a savepoint; if a concurrent request committed the same key first, answer with its object."""
    try:
        with session.begin_nested():
            return create()
    except IntegrityError:
        existing = find()
        if existing is None:
            raise
        return replay(existing, digest)
