"""Typed errors for the calls that must block (start_run, reads, uploads, finish(wait=True)).

Trace events never raise: the background sender logs delivery problems once and keeps going.
"""

from __future__ import annotations

from typing import Any


class RolloutError(Exception):
    """Base class of every error the SDK raises."""


class ConfigurationError(RolloutError):
    """The client lacks something it needs (server URL, API key) or was given something unusable."""


class RolloutConnectionError(RolloutError):
    """The server could not be reached (after retries), or did not answer in time."""


class DeliveryError(RolloutError):
    """`finish(wait=True)` or `run.finish(wait=True)` could not confirm delivery; the data is kept in the
    spool folder and delivered later."""


class APIError(RolloutError):
    """The server answered with an error (RFC 9457 problem details)."""

    def __init__(
        self,
        status: int,
        title: str,
        detail: str,
        *,
        method: str = "",
        path: str = "",
        type: str | None = None,
        errors: list[dict[str, Any]] | None = None,
        body: Any = None,
    ) -> None:
        self.status = status
        self.title = title
        self.detail = detail
        self.method = method
        self.path = path
        self.type = type
        self.errors = errors or []
        self.body = body
        where = f"{method} {path} -> " if method else ""
        message = f"{where}{status} {title}: {detail}"
        fields = [f"{e.get('field')}: {e.get('message')}" for e in self.errors if e.get("field")]
        if len(fields) > 1:
            message += " [" + "; ".join(fields) + "]"
        super().__init__(message)


class BadRequestError(APIError):
    """400: the request was malformed."""


class AuthenticationError(APIError):
    """401: the API key is missing, wrong or revoked."""


class PermissionDeniedError(APIError):
    """403: the API key may not do this."""


class NotFoundError(APIError):
    """404: no such object in this workspace."""


class ConflictError(APIError):
    """409: the object is not in a state that allows this (e.g. a rollout that already finished)."""


class PayloadTooLargeError(APIError):
    """413: the request body is over the server's limit."""


class InvalidRequestError(APIError):
    """422: a field is invalid; `errors` names each one."""


class RateLimitError(APIError):
    """429: too many requests; retried automatically before this is raised."""


class ServerError(APIError):
    """5xx: the server failed; retried automatically before this is raised."""


_BY_STATUS: dict[int, type[APIError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    413: PayloadTooLargeError,
    422: InvalidRequestError,
    429: RateLimitError,
}


def api_error(status: int, body: Any, *, method: str = "", path: str = "", text: str = "") -> APIError:
    """Build the typed error for a non-2xx answer from its problem+json body (or whatever came back)."""
    cls = _BY_STATUS.get(status, ServerError if status >= 500 else APIError)
    if isinstance(body, dict):
        title = str(body.get("title") or "Error")
        detail = str(body.get("detail") or title)
        errors = body.get("errors") if isinstance(body.get("errors"), list) else None
        kind = body.get("type") if isinstance(body.get("type"), str) else None
    else:
        title, detail, errors, kind = (
            "Error",
            (text.strip()[:500] or "no details in the response"),
            None,
            None,
        )
    if status == 401:
        detail += " Check ROLLOUT_API_KEY (or run `rollout login`)."
    return cls(status, title, detail, method=method, path=path, type=kind, errors=errors, body=body)
