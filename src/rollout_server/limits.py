"""Request body limits enforced at the ASGI layer, before any handler buffers the body."""

from __future__ import annotations

from collections.abc import Callable

import orjson
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .errors import PROBLEM_TYPE_BASE


class BodyTooLarge(StarletteHTTPException):
    """An HTTPException, so frameworks that wrap body-parsing errors re-raise it as a 413."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            413,
            f"The request body exceeds the limit of {limit} bytes for this endpoint; split it into smaller requests.",
        )
        self.limit = limit


class BodySizeLimit:
    """Refuse bodies over the limit for their path: from Content-Length at once, or while streaming."""

    def __init__(self, app: ASGIApp, limit_for: Callable[[str], int]) -> None:
        self.app = app
        self.limit_for = limit_for

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        limit = self.limit_for(scope["path"])
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = 0
                if declared > limit:
                    await _send_413(send, scope["path"], limit)
                    return
        received = 0
        response_started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(limit)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal response_started
            if message["type"] == "http.response.start":
                response_started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except BodyTooLarge:
            if not response_started:
                await _send_413(send, scope["path"], limit)


async def _send_413(send: Send, path: str, limit: int) -> None:
    body = orjson.dumps(
        {
            "type": PROBLEM_TYPE_BASE + "payload-too-large",
            "title": "Payload too large",
            "status": 413,
            "detail": f"The request body exceeds the limit of {limit} bytes for this endpoint; "
            "split it into smaller requests.",
            "instance": path,
            "limit_bytes": limit,
        }
    )
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/problem+json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
