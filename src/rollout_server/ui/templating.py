"""Jinja2 environment for the pages: autoescaping on, formatting filters, and one `render` helper."""

from __future__ import annotations

import hashlib
import math
import os
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import orjson
from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup

from . import render as rich

ROOT = Path(__file__).resolve().parents[3]
WEB_DIR = Path(os.environ.get("ROLLOUT_WEB_DIR") or ROOT / "web")
TEMPLATES_DIR = WEB_DIR / "templates"
STATIC_DIR = WEB_DIR / "static"
VENDOR_DIR = WEB_DIR / "node_modules"


def fmt_ms(value: float | None) -> str:
    if value is None:
        return "—"
    if value < 1000:
        return f"{value:.0f} ms"
    if value < 60_000:
        return f"{value / 1000:.2f} s"
    return f"{value / 60_000:.1f} min"


def fmt_tokens(value: int | float | None) -> str:
    if not value:
        return "0"
    value = float(value)
    if value >= 1_000_000:
        return f"{value / 1_000_000:.2f}M"
    if value >= 10_000:
        return f"{value / 1000:.1f}k"
    return f"{value:,.0f}"


def fmt_cost(value: float | None) -> str:
    if not value:
        return "$0"
    if value < 0.01:
        return f"${value:.5f}"
    return f"${value:,.3f}" if value < 100 else f"${value:,.0f}"


def fmt_num(value: float | None, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return f"{value:.{digits}g}" if abs(value) >= 1e-3 or value == 0 else f"{value:.2e}"


def fmt_pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.0f}%"


def fmt_time(value: datetime | None) -> str:
    if value is None:
        return "—"
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def fmt_ago(value: datetime | None) -> str:
    if value is None:
        return "—"
    seconds = (datetime.now(UTC) - value).total_seconds()
    if seconds < 60:
        return f"{max(0, int(seconds))}s ago"
    if seconds < 3600:
        return f"{int(seconds // 60)}m ago"
    if seconds < 86400:
        return f"{int(seconds // 3600)}h ago"
    return f"{int(seconds // 86400)}d ago"


def to_json(value: Any, indent: bool = True) -> str:
    option = orjson.OPT_INDENT_2 if indent else 0
    return orjson.dumps(value, option=option | orjson.OPT_NON_STR_KEYS, default=str).decode()


def reward_class(value: float | None, low: float = 0.0, high: float = 1.0) -> str:
    """A red-to-green class r0…r10 for a value on [low, high]; `rn` when there is no value."""
    if value is None:
        return "rn"
    span = (high - low) or 1.0
    step = round(max(0.0, min(1.0, (value - low) / span)) * 10)
    return f"r{step}"


@cache
def _static_version(name: str) -> str:
    path = STATIC_DIR / name
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:10]
    except OSError:
        return "0"


def static_url(name: str) -> str:
    return f"/static/{name}?v={_static_version(name)}"


def query(params: dict[str, Any], **changes: Any) -> str:
    """The current query string with some keys changed (None removes a key): URLs keep the whole state."""
    merged = {**params, **changes}
    return urlencode([(k, v) for k, v in merged.items() if v not in (None, "", False)], doseq=True)


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES_DIR)),
        autoescape=select_autoescape(["html", "svg"], default_for_string=True, default=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        ms=fmt_ms, tokens=fmt_tokens, cost=fmt_cost, num=fmt_num, pct=fmt_pct, time=fmt_time, ago=fmt_ago,
        json=to_json, reward_class=reward_class,
    )
    env.globals.update(static_url=static_url, query=query, rich=rich, Markup=Markup)
    return env


templates = _environment()


def flash(request: Request, message: str) -> None:
    """A message for the next full page (after a redirect)."""
    session = request.scope.get("state", {}).get("ui_session")
    if session is not None:
        session.flash, session.changed = message, True


def render(request: Request, name: str, context: dict[str, Any], status_code: int = 200, *,
           partial: bool = False) -> HTMLResponse:
    session = request.scope.get("state", {}).get("ui_session")
    message = None
    if session is not None and session.flash and not partial:
        message, session.flash, session.changed = session.flash, None, True
    html = templates.get_template(name).render(
        request=request, csrf_token=session.csrf if session else "", flash=message, **context
    )
    return HTMLResponse(html, status_code=status_code)
