"""What every command shares: the client from flags/env/login file, output as tables or JSON, and
errors turned into one readable line and a meaningful exit code."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any, TypeVar

import typer
from pydantic import BaseModel
from rich.console import Console

from .._client import Client
from .._errors import (
    APIError,
    AuthenticationError,
    ConfigurationError,
    ConflictError,
    DeliveryError,
    InvalidRequestError,
    NotFoundError,
    PermissionDeniedError,
    RolloutConnectionError,
    RolloutError,
)

# Piped output is not cut at 80 columns: ids and URLs must survive `| grep` and copy-paste.
_WIDTH = None if sys.stdout.isatty() else int(os.environ.get("COLUMNS") or 200)
console = Console(highlight=False, soft_wrap=False, width=_WIDTH)
err_console = Console(
    stderr=True, highlight=False, width=None if sys.stderr.isatty() else int(os.environ.get("COLUMNS") or 200)
)

# Exit codes (documented in docs/cli.md).
OK, FAILED, USAGE, AUTH, NOT_FOUND, UNREACHABLE, REFUSED, SERVER = 0, 1, 2, 3, 4, 5, 6, 7

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON (for scripts) instead of tables.")]

T = TypeVar("T")


class State:
    """Global options, filled by the app callback."""

    base_url: str | None = None
    api_key: str | None = None
    _client: Client | None = None

    @classmethod
    def client(cls) -> Client:
        if cls._client is None:
            cls._client = Client(cls.base_url, cls.api_key, deliver_spool=False, max_retries=2)
        return cls._client


def to_jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: to_jsonable(v) for k, v in value.items()}
    info = getattr(value, "info", None)
    if isinstance(info, BaseModel):
        return info.model_dump(mode="json")
    return value


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(to_jsonable(value), indent=2, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


def fail(message: str, code: int = FAILED, hint: str | None = None) -> typer.Exit:
    err_console.print(f"[bold red]error:[/] {message}")
    if hint:
        err_console.print(f"[dim]{hint}[/]")
    return typer.Exit(code)


def _exit_for(error: Exception) -> typer.Exit:
    if isinstance(error, ConfigurationError):
        return fail(str(error), AUTH)
    if isinstance(error, AuthenticationError | PermissionDeniedError):
        return fail(f"{error.detail}", AUTH, "Log in again with `rollout login`, or check ROLLOUT_API_KEY.")
    if isinstance(error, NotFoundError):
        return fail(error.detail, NOT_FOUND)
    if isinstance(error, RolloutConnectionError):
        return fail(str(error), UNREACHABLE, "Start the server (`rollout-server serve`) or pass --base-url.")
    if isinstance(error, InvalidRequestError | ConflictError):
        fields = "; ".join(f"{e.get('field')}: {e.get('message')}" for e in error.errors if e.get("field"))
        return fail(error.detail + (f" ({fields})" if fields and fields not in error.detail else ""), REFUSED)
    if isinstance(error, APIError):
        return fail(str(error), SERVER if error.status >= 500 else REFUSED)
    if isinstance(error, DeliveryError):
        return fail(str(error), UNREACHABLE)
    return fail(str(error), FAILED)


@contextmanager
def handle_errors() -> Iterator[None]:
    """Turn SDK errors into a message on stderr and the matching exit code."""
    try:
        yield
    except typer.Exit:
        raise
    except RolloutError as error:
        raise _exit_for(error) from None
    except (OSError, ValueError, TypeError) as error:
        raise fail(str(error), FAILED) from None


def command(func: Callable[..., T]) -> Callable[..., T]:
    """Decorator: run the command body inside handle_errors()."""
    import functools

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        with handle_errors():
            return func(*args, **kwargs)

    return wrapper


def short(value: Any, width: int = 80) -> str:
    """One line, at most `width` characters, for tables and traces."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def when(value: Any) -> str:
    if value is None:
        return ""
    try:
        return value.astimezone().strftime("%Y-%m-%d %H:%M:%S")
    except (AttributeError, ValueError):
        return str(value)
