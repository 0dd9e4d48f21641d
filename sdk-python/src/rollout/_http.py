"""HTTP for the blocking calls: auth, problem+json errors, and retries that never duplicate a write.

Connection failures, 429/408 and 503 with Retry-After (the server's database pool was exhausted) are
retried for every method: the server never saw the request or refused it before doing anything. 5xx and
broken responses are retried only for requests that are safe to repeat: reads, and writes the caller
marks idempotent (starts carrying a client_key, event ingestion keyed by event id). Keyed starts also
retry one 409, the answer of the loser of a race between two requests with the same key.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
import weakref
from collections.abc import Iterator, Mapping
from typing import Any

import httpx

from ._config import Settings
from ._errors import APIError, ConfigurationError, RolloutConnectionError, api_error
from ._version import __version__

API_PREFIX = "/api/v1"
USER_AGENT = f"rollout-sdk-python/{__version__}"
_IDEMPOTENT_METHODS = {"GET", "HEAD", "PUT", "DELETE", "OPTIONS"}
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
_BROKEN = (
    httpx.ReadTimeout,
    httpx.WriteTimeout,
    httpx.ReadError,
    httpx.WriteError,
    httpx.RemoteProtocolError,
)


def api_path(path: str) -> str:
    if path.startswith(("http://", "https://", "/api/", "/healthz")):
        return path
    return API_PREFIX + path


def backoff_delay(attempt: int, *, base: float = 0.25, cap: float = 10.0) -> float:
    """Exponential backoff with full jitter: uniform(0, min(cap, base * 2**attempt)), at least 10 ms."""
    return max(0.01, random.uniform(0, min(cap, base * (2**attempt))))


def retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, min(float(value), 60.0))
    except ValueError:
        return None


def should_retry(
    method: str, idempotent: bool | None, *, status: int | None = None, error: Exception | None = None
) -> bool:
    repeatable = idempotent if idempotent is not None else method in _IDEMPOTENT_METHODS
    if error is not None:
        if isinstance(error, _NOT_SENT):
            return True
        return repeatable and isinstance(error, _BROKEN)
    if status in (408, 429):
        return True
    return repeatable and status is not None and status >= 500 and status != 501


def _retry_answer(response: httpx.Response, method: str, idempotent: bool | None, conflicts_left: int) -> bool:
    status = response.status_code
    if status == 503 and response.headers.get("retry-after"):
        return True  # overloaded: refused before any work was done
    if status == 409 and conflicts_left > 0:
        return True
    return should_retry(method, idempotent, status=status)


def decode(response: httpx.Response, method: str, path: str) -> Any:
    if response.status_code >= 400:
        try:
            body: Any = response.json()
        except ValueError:
            body = None
        raise api_error(response.status_code, body, method=method, path=path, text=response.text)
    if response.status_code == 204 or not response.content:
        return None
    content_type = response.headers.get("content-type", "")
    if "json" in content_type:
        return response.json()
    return response.content


def connection_error(method: str, path: str, base_url: str, error: Exception, attempts: int) -> RolloutConnectionError:
    return RolloutConnectionError(
        f"{method} {path}: could not reach the Rollout server at {base_url} after {attempts} attempt(s) "
        f"({type(error).__name__}: {error}). Is the server running, and is ROLLOUT_BASE_URL right?"
    )


def _headers(settings: Settings) -> dict[str, str]:
    headers = {"User-Agent": USER_AGENT, "Accept": "application/json", **settings.headers}
    if settings.api_key:
        headers["Authorization"] = f"Bearer {settings.api_key}"
    return headers


def _timeout(settings: Settings) -> httpx.Timeout:
    # Waiting for a free pooled connection is not the server being slow: no pool timeout.
    return httpx.Timeout(settings.timeout, connect=min(settings.timeout, 10.0), pool=None)


def _limits(settings: Settings) -> httpx.Limits:
    # A few connections per client: more would only queue inside the server (and its database pool).
    return httpx.Limits(max_connections=settings.max_connections, max_keepalive_connections=settings.max_connections)


def _require_key(settings: Settings) -> None:
    if not settings.api_key:
        raise ConfigurationError(
            "No API key: set ROLLOUT_API_KEY, call rollout.configure(api_key=...), pass api_key= to "
            "rollout.Client, or run `rollout login`."
        )


class SyncTransport:
    """One pooled httpx.Client, safe to share between threads."""

    def __init__(self, settings: Settings, *, client: httpx.Client | None = None) -> None:
        self.settings = settings
        self.client = client or httpx.Client(
            base_url=settings.base_url,
            headers=_headers(settings),
            timeout=_timeout(settings),
            limits=_limits(settings),
        )

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
        content: Any = None,
        headers: Mapping[str, str] | None = None,
        idempotent: bool | None = None,
        max_retries: int | None = None,
        retry_conflict: bool = False,
    ) -> Any:
        """`retry_conflict`: the body carries an idempotency key, so a 409 from a race on it is retried once
        (the retry finds what the winner created)."""
        _require_key(self.settings)
        url = api_path(path)
        retries = self.settings.max_retries if max_retries is None else max_retries
        clean = {k: v for k, v in (params or {}).items() if v is not None}
        attempt = 0
        conflicts_left = 1 if retry_conflict else 0
        while True:
            body = content() if callable(content) else content  # a factory gives fresh bytes per try
            try:
                response = self.client.request(method, url, json=json, params=clean, content=body, headers=headers)
            except httpx.HTTPError as error:
                if attempt < retries and should_retry(method, idempotent, error=error):
                    time.sleep(backoff_delay(attempt, cap=self.settings.max_backoff))
                    attempt += 1
                    continue
                raise connection_error(method, url, self.settings.base_url, error, attempt + 1) from error
            finally:
                if body is not content and hasattr(body, "close"):
                    body.close()
            if attempt < retries and _retry_answer(response, method, idempotent, conflicts_left):
                conflicts_left -= response.status_code == 409
                time.sleep(retry_after(response) or backoff_delay(attempt, cap=self.settings.max_backoff))
                attempt += 1
                continue
            return decode(response, method, url)

    @contextlib.contextmanager
    def stream(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        content: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> Iterator[httpx.Response]:
        """A streamed response (raises the typed error for a non-2xx answer); no retries."""
        _require_key(self.settings)
        url = api_path(path)
        clean = {k: v for k, v in (params or {}).items() if v is not None}
        try:
            with self.client.stream(
                method,
                url,
                params=clean,
                content=content,
                headers=headers,
                timeout=httpx.Timeout(self.settings.timeout, read=None),
            ) as response:
                if response.status_code >= 400:
                    response.read()
                    decode(response, method, url)
                yield response
        except httpx.HTTPError as error:
            raise connection_error(method, url, self.settings.base_url, error, 1) from error

    def stream_to(self, path: str, sink: Any, *, chunk_size: int = 1 << 20) -> int:
        """GET `path` and write the body into `sink` (a binary file); returns the byte count."""
        _require_key(self.settings)
        url = api_path(path)
        attempt = 0
        while True:
            try:
                sink.seek(0)
                sink.truncate()
                with self.client.stream("GET", url) as response:
                    if response.status_code >= 400:
                        response.read()
                        if attempt < self.settings.max_retries and should_retry(
                            "GET", None, status=response.status_code
                        ):
                            raise _Retry()
                        decode(response, "GET", url)
                    total = 0
                    for chunk in response.iter_bytes(chunk_size):
                        sink.write(chunk)
                        total += len(chunk)
                    return total
            except _Retry:
                pass
            except httpx.HTTPError as error:
                if not (attempt < self.settings.max_retries and should_retry("GET", None, error=error)):
                    raise connection_error("GET", url, self.settings.base_url, error, attempt + 1) from error
            time.sleep(backoff_delay(attempt, cap=self.settings.max_backoff))
            attempt += 1

    def paginate(
        self,
        path: str,
        params: Mapping[str, Any] | None = None,
        *,
        page_size: int = 200,
        limit: int | None = None,
    ) -> Iterator[Any]:
        """Yield every item of a list endpoint, following next_cursor; stop after `limit` items."""
        query = dict(params or {})
        cursor = query.pop("cursor", None)
        seen = 0
        while True:
            size = page_size if limit is None else max(1, min(page_size, limit - seen))
            page = self.request("GET", path, params={**query, "cursor": cursor, "limit": size})
            for item in page.get("items", []):
                yield item
                seen += 1
                if limit is not None and seen >= limit:
                    return
            cursor = page.get("next_cursor")
            if not cursor:
                return

    def close(self) -> None:
        self.client.close()


class _Retry(Exception):
    pass


class AsyncTransport:
    """The asyncio twin of SyncTransport (one httpx.AsyncClient per event loop that uses it)."""

    def __init__(self, settings: Settings, *, client: httpx.AsyncClient | None = None) -> None:
        self.settings = settings
        self._given = client
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
            weakref.WeakKeyDictionary()
        )

    def _client(self) -> httpx.AsyncClient:
        if self._given is not None:
            return self._given
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None or client.is_closed:
            client = httpx.AsyncClient(
                base_url=self.settings.base_url,
                headers=_headers(self.settings),
                timeout=_timeout(self.settings),
                limits=_limits(self.settings),
            )
            self._clients[loop] = client
        return client

    async def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
        content: Any = None,
        headers: Mapping[str, str] | None = None,
        idempotent: bool | None = None,
        max_retries: int | None = None,
        retry_conflict: bool = False,
    ) -> Any:
        """`retry_conflict`: the body carries an idempotency key, so a 409 from a race on it is retried once
        (the retry finds what the winner created)."""
        _require_key(self.settings)
        url = api_path(path)
        retries = self.settings.max_retries if max_retries is None else max_retries
        clean = {k: v for k, v in (params or {}).items() if v is not None}
        attempt = 0
        conflicts_left = 1 if retry_conflict else 0
        client = self._client()
        while True:
            try:
                response = await client.request(method, url, json=json, params=clean, content=content, headers=headers)
            except httpx.HTTPError as error:
                if attempt < retries and should_retry(method, idempotent, error=error):
                    await asyncio.sleep(backoff_delay(attempt, cap=self.settings.max_backoff))
                    attempt += 1
                    continue
                raise connection_error(method, url, self.settings.base_url, error, attempt + 1) from error
            if attempt < retries and _retry_answer(response, method, idempotent, conflicts_left):
                conflicts_left -= response.status_code == 409
                await asyncio.sleep(retry_after(response) or backoff_delay(attempt, cap=self.settings.max_backoff))
                attempt += 1
                continue
            return decode(response, method, url)

    async def paginate_pages(self, path: str, params: Mapping[str, Any] | None = None, *, page_size: int = 200) -> Any:
        query = dict(params or {})
        cursor = query.pop("cursor", None)
        while True:
            page = await self.request("GET", path, params={**query, "cursor": cursor, "limit": page_size})
            yield page.get("items", [])
            cursor = page.get("next_cursor")
            if not cursor:
                return

    async def aclose(self) -> None:
        loop = asyncio.get_running_loop()
        client = self._clients.pop(loop, None)
        if client is not None and not client.is_closed:
            await client.aclose()


__all__ = ["APIError", "AsyncTransport", "SyncTransport", "api_path", "backoff_delay"]
