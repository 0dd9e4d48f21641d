"""The API's route class: JSON request bodies parsed by orjson, and cleaned only when they need it.

FastAPI parses a JSON body with the standard library and validates the resulting dict; every request schema
then walks it once more (`clean_json`) for NUL characters and non-finite numbers. orjson parses twice as fast
and refuses NaN, Infinity and numbers out of range itself, so a body with no escaped NUL comes out clean and
is marked so (`CheckedJSON`), and the schema skips the walk. On the ingest path that is a fifth of the
server's time per event.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any

import orjson
from fastapi import APIRouter, Request, Response
from fastapi.routing import APIRoute

from ..common.schemas import CheckedJSON

_ESCAPED_NUL = b"\\u0000"


class JSONRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            body = await self.body()
            try:
                value = orjson.loads(body)
            except orjson.JSONDecodeError:
                # What orjson refuses but JSON allows (1e400, lone surrogates) or Python reads (NaN) takes the
                # standard path, so the schema's cleaning answers it as before; plain malformed JSON raises here.
                self._json = json.loads(body)
                return self._json
            if type(value) is dict and _ESCAPED_NUL not in body:
                value = CheckedJSON(value)
            self._json = value
        return self._json


class JSONRoute(APIRoute):
    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def handle(request: Request) -> Response:
            return await handler(JSONRequest(request.scope, request.receive, request._send))

        return handle


def api_router(**kwargs: Any) -> APIRouter:
    """An APIRouter whose routes parse JSON bodies as above."""
    return APIRouter(route_class=JSONRoute, **kwargs)
