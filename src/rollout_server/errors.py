"""RFC 9457 problem details: every error the API returns names what was wrong and where."""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, Field
from sqlalchemy.exc import DataError, IntegrityError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

PROBLEM_TYPE_BASE = "https://rollout.dev/problems/"


class ProblemResponse(Response):
    media_type = "application/problem+json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


class ProblemField(BaseModel):
    field: str = Field(description="Path of the offending field inside the request, e.g. events.2.kind.")
    message: str
    in_: str | None = Field(None, alias="in", description="body, query, path or header.")


class Problem(BaseModel):
    """An RFC 9457 problem detail (`application/problem+json`)."""

    type: str
    title: str
    status: int
    detail: str
    instance: str | None = None
    errors: list[ProblemField] | None = None


def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` entries documenting problem+json answers."""
    descriptions = {400: "Malformed request", 401: "Missing, unknown or revoked API key", 404: "Not found",
                    409: "Conflict with the current state", 413: "Body too large", 422: "Invalid field"}
    return {
        status: {"model": Problem, "description": descriptions.get(status, "Problem"),
                 "content": {"application/problem+json": {}}}
        for status in statuses
    }


class AppError(Exception):
    """A client-visible failure. Services raise these; the handler turns them into problem+json."""

    status = 400
    code = "bad-request"
    title = "Bad request"

    def __init__(self, detail: str, *, errors: list[dict[str, Any]] | None = None, **extra: Any) -> None:
        super().__init__(detail)
        self.detail = detail
        self.errors = errors
        self.extra = extra


class NotFound(AppError):
    status = 404
    code = "not-found"
    title = "Not found"


class Conflict(AppError):
    status = 409
    code = "conflict"
    title = "Conflict"


class IdempotencyKeyReused(Conflict):
    code = "idempotency-key-reused"
    title = "Idempotency key reused with a different request"


class Unauthorized(AppError):
    status = 401
    code = "unauthorized"
    title = "Unauthorized"


class Forbidden(AppError):
    status = 403
    code = "forbidden"
    title = "Forbidden"


class InvalidInput(AppError):
    status = 422
    code = "invalid-input"
    title = "Invalid input"

    def __init__(self, detail: str, *, field: str | None = None, **kwargs: Any) -> None:
        if field is not None and "errors" not in kwargs:
            kwargs["errors"] = [{"field": field, "message": detail}]
        super().__init__(detail, **kwargs)


class PayloadTooLarge(AppError):
    status = 413
    code = "payload-too-large"
    title = "Payload too large"


def problem(
    status: int,
    code: str,
    title: str,
    detail: str,
    *,
    instance: str | None = None,
    errors: list[dict[str, Any]] | None = None,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> ProblemResponse:
    body: dict[str, Any] = {"type": PROBLEM_TYPE_BASE + code, "title": title, "status": status, "detail": detail}
    if instance:
        body["instance"] = instance
    if errors:
        body["errors"] = errors
    body.update(extra)
    return ProblemResponse(body, status_code=status, headers=headers)


# Pydantic names the member of a union a value failed against ("value.float", "value.str"); people
# asked for the field, so those tags are dropped from the path.
_TYPE_TAGS = {"float", "int", "bool", "str", "dict", "list", "none", "bytes", "datetime", "date", "uuid"}


def _is_type_tag(part: Any) -> bool:
    return isinstance(part, str) and (part in _TYPE_TAGS or "[" in part)


def _field_path(loc: tuple[Any, ...] | list[Any]) -> str:
    """'body.events.2.kind' → 'events.2.kind': the path inside the request, without union member tags."""
    parts = list(loc)
    if parts and parts[0] in ("body", "query", "path", "header", "cookie"):
        parts = parts[1:]
    names = [str(p) for p in parts if not _is_type_tag(p)]
    return ".".join(names) if names else str(loc[0]) if loc else ""


def _validation_errors(exc: RequestValidationError) -> tuple[str, list[dict[str, Any]], int, str, str]:
    errors: list[dict[str, Any]] = []
    for err in exc.errors():
        loc = tuple(err.get("loc", ()))
        if err.get("type") == "json_invalid":
            ctx = err.get("ctx") or {}
            return (
                f"The request body is not valid JSON: {ctx.get('error', 'parse error')} "
                f"(at character {loc[1] if len(loc) > 1 else '?'}).",
                [{"field": "body", "message": "malformed JSON"}],
                400,
                "malformed-json",
                "Malformed JSON",
            )
        field = _field_path(loc)
        message = err.get("msg", "")
        same = next((e for e in errors if e["field"] == field), None)
        if same is not None:
            if message not in same["message"]:
                same["message"] += f"; or: {message}"
            continue
        errors.append({"field": field, "in": loc[0] if loc else "body", "message": message})
    first = errors[0] if errors else {"field": "body", "message": "invalid"}
    detail = f"Field '{first['field']}': {first['message']}"
    if len(errors) > 1:
        detail += f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})"
    return detail, errors, 422, "invalid-input", "Invalid input"


_HTTP_TITLES = {
    400: "Bad request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not found",
    405: "Method not allowed",
    409: "Conflict",
    413: "Payload too large",
    415: "Unsupported media type",
    422: "Invalid input",
    429: "Too many requests",
}


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(AppError)
    async def _app_error(request: Request, exc: AppError) -> Response:
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        return problem(
            exc.status, exc.code, exc.title, exc.detail, instance=request.url.path, errors=exc.errors,
            headers=headers, **exc.extra,
        )

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> Response:
        detail, errors, status, code, title = _validation_errors(exc)
        return problem(status, code, title, detail, instance=request.url.path, errors=errors)

    @app.exception_handler(IntegrityError)
    async def _integrity_error(request: Request, exc: IntegrityError) -> Response:
        # Two requests raced for the same unique value (a name, an idempotency key): the loser retries.
        return problem(
            409, "conflict", "Conflict",
            "A concurrent request wrote the same unique value (a name or an idempotency key); retry the request.",
            instance=request.url.path,
        )

    @app.exception_handler(PoolTimeout)
    async def _pool_timeout(request: Request, exc: PoolTimeout) -> Response:
        return problem(
            503, "overloaded", "Service overloaded",
            "Every database connection stayed busy; retry the request in a moment.",
            instance=request.url.path, headers={"Retry-After": "1"},
        )

    @app.exception_handler(DataError)
    async def _data_error(request: Request, exc: DataError) -> Response:
        # A safety net: values the schemas let through but the database refuses are the client's to fix.
        return problem(
            422, "invalid-input", "Invalid input",
            "A value is out of range for its field or holds characters the database cannot store.",
            instance=request.url.path,
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> Response:
        title = _HTTP_TITLES.get(exc.status_code, "Error")
        detail = exc.detail if isinstance(exc.detail, str) else title
        if exc.status_code == 404 and detail == "Not Found":
            detail = f"No such endpoint: {request.method} {request.url.path}"
        return problem(
            exc.status_code, title.lower().replace(" ", "-"), title, detail, instance=request.url.path,
            headers=getattr(exc, "headers", None),
        )
