"""Typed request dependencies: the app context, sessions (one owner per transaction) and the caller."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from ..auth.keys import hash_key
from ..context import AppContext
from ..db.types import utcnow
from ..errors import Unauthorized
from ..workspaces.repository import ApiKeyRepository


async def get_context(request: Request) -> AppContext:
    # async: FastAPI runs a plain `def` dependency on the thread pool, a hop that costs more than this does.
    ctx: AppContext = request.app.state.ctx
    return ctx


Ctx = Annotated[AppContext, Depends(get_context)]


def write_session(ctx: Ctx) -> Iterator[Session]:
    """Commits when the handler returns, before the response is sent: a 2xx means committed."""
    with ctx.db.transaction() as session:
        yield session


def read_session(ctx: Ctx) -> Iterator[Session]:
    with ctx.db.reading() as session:
        yield session


WriteSession = Annotated[Session, Depends(write_session, scope="function")]
ReadSession = Annotated[Session, Depends(read_session, scope="function")]


@dataclass(frozen=True)
class Caller:
    workspace_id: str
    key_id: str


class _KeyCache:
    """Short-lived cache of key lookups, so hot ingestion paths skip a query per request.
    Revocation through this process clears it at once; other processes see it within TTL seconds."""

    TTL = 5.0
    TOUCH_EVERY = 60.0

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, tuple[float, Caller]] = {}
        self._touched: dict[str, float] = {}
        # Keys revoked through this process: refused at once, even if a concurrent request re-cached them.
        self._revoked: set[str] = set()

    def get(self, key_hash: str) -> Caller | None:
        with self._lock:
            entry = self._entries.get(key_hash)
        if entry and entry[0] > time.monotonic() and entry[1].key_id not in self._revoked:
            return entry[1]
        return None

    def put(self, key_hash: str, caller: Caller) -> None:
        with self._lock:
            self._entries[key_hash] = (time.monotonic() + self.TTL, caller)

    def revoke(self, key_id: str) -> None:
        with self._lock:
            self._revoked.add(key_id)
            self._entries = {h: e for h, e in self._entries.items() if e[1].key_id != key_id}

    def is_revoked(self, key_id: str) -> bool:
        return key_id in self._revoked

    def due_for_touch(self, key_id: str) -> bool:
        now = time.monotonic()
        with self._lock:
            if now - self._touched.get(key_id, 0.0) < self.TOUCH_EVERY:
                return False
            self._touched[key_id] = now
            return True


key_cache = _KeyCache()


def _bearer(request: Request) -> str:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("Send your API key as 'Authorization: Bearer <key>'. Create one with "
                           "`rollout-server keys create --workspace NAME` or in Settings → API keys.")
    return token.strip()


async def get_caller(request: Request, ctx: Ctx) -> Caller:
    """The key's workspace. A cached key costs no thread-pool hop; the database is asked on the pool."""
    key_hash = hash_key(_bearer(request))
    caller = key_cache.get(key_hash)
    if caller is None:
        caller = await run_in_threadpool(_look_up, ctx, key_hash)
    if key_cache.due_for_touch(caller.key_id):
        await run_in_threadpool(_touch, ctx, caller.key_id)
    return caller


def _look_up(ctx: AppContext, key_hash: str) -> Caller:
    with ctx.db.reading() as session:
        key = ApiKeyRepository(session).get_active_by_hash(key_hash)
        if key is None:
            raise Unauthorized("This API key is not valid: it is unknown or was revoked.")
        caller = Caller(workspace_id=key.workspace_id, key_id=key.id)
    if key_cache.is_revoked(caller.key_id):
        raise Unauthorized("This API key is not valid: it is unknown or was revoked.")
    key_cache.put(key_hash, caller)
    return caller


def _touch(ctx: AppContext, key_id: str) -> None:
    # last_used_at is kept to the minute; writing it on every request would serialise ingestion.
    with ctx.db.transaction() as session:
        ApiKeyRepository(session).touch(key_id, utcnow())


CurrentCaller = Annotated[Caller, Depends(get_caller)]
