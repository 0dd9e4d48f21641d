"""Turning untrusted text into HTML: markdown rendered then sanitised with nh3, code highlighted with
Pygments, LaTeX left as text for KaTeX (MathML output, no inline styles), <think> blocks folded.

Every function returns Markup that is safe by construction: either escaped text or nh3's output.
"""

from __future__ import annotations

import html
import re
import secrets
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import nh3
import orjson
from markdown_it import MarkdownIt
from markupsafe import Markup, escape
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import JsonLexer, get_lexer_by_name
from pygments.util import ClassNotFound

# Longest text rendered in one go; longer values show their start and a link to the whole value.
TEXT_LIMIT = 20_000

ALLOWED_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "del", "details", "div", "em", "h1", "h2", "h3", "h4", "h5",
    "h6", "hr", "i", "img", "ins", "kbd", "li", "ol", "p", "pre", "s", "span", "strong", "sub", "summary", "sup",
    "table", "tbody", "td", "th", "thead", "tr", "ul",
}
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "title"},
    "span": {"class"},
    "code": {"class"},
    "pre": {"class"},
    "div": {"class"},
    "td": {"align"},
    "th": {"align"},
}


@dataclass(frozen=True)
class RenderOptions:
    """The render toggles of a page; each is a query parameter so a pasted URL shows the same view."""

    md: bool = True
    code: bool = True
    latex: bool = True
    think: bool = True
    raw: bool = False

    @classmethod
    def from_query(cls, params: Any) -> RenderOptions:
        def flag(name: str, default: bool) -> bool:
            value = params.get(name)
            return default if value is None else value not in ("0", "false", "off", "")

        return cls(md=flag("md", True), code=flag("code", True), latex=flag("latex", True),
                   think=flag("think", True), raw=flag("raw", False))

    def as_query(self) -> dict[str, str]:
        defaults = RenderOptions()
        return {name: "1" if getattr(self, name) else "0" for name in ("md", "code", "latex", "think", "raw")
                if getattr(self, name) != getattr(defaults, name)}


_FORMATTER = HtmlFormatter(nowrap=True)


def _highlight(code: str, language: str | None) -> str:
    try:
        lexer = get_lexer_by_name(language or "text")
    except ClassNotFound:
        lexer = get_lexer_by_name("text")
    return str(highlight(code, lexer, _FORMATTER))


@lru_cache(maxsize=2)
def _markdown(code: bool) -> MarkdownIt:
    def fence(content: str, language: str, _attrs: str) -> str:
        return _highlight(content, language) if code else ""

    options: dict[str, Any] = {"html": True, "linkify": False, "typographer": False}
    if code:
        options["highlight"] = fence
    return MarkdownIt("commonmark", options).enable(["table", "strikethrough"])


def sanitize(fragment: str) -> str:
    return nh3.clean(
        fragment, tags=ALLOWED_TAGS, attributes=ALLOWED_ATTRIBUTES, url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow", strip_comments=True,
    )


_MATH = re.compile(r"\$\$(.+?)\$\$|\\\[(.+?)\\\]|\\\((.+?)\\\)|(?<![\\$\w])\$([^\s$](?:[^$\n]*?[^\s$])?)\$(?!\w)",
                   re.DOTALL)
_THINK = re.compile(r"<think>(.*?)(?:</think>|$)", re.DOTALL | re.IGNORECASE)


def _protect_math(text: str) -> tuple[str, dict[str, str]]:
    """Take LaTeX out before markdown sees it (underscores would become emphasis), to put back escaped."""
    found: dict[str, str] = {}
    token = secrets.token_hex(4)

    def replace(match: re.Match[str]) -> str:
        display = match.group(1) is not None or match.group(2) is not None
        tex = next(g for g in match.groups() if g is not None)
        key = f"MATH{token}X{len(found)}X"
        cls = "math-display" if display else "math-inline"
        found[key] = f'<span class="{cls}">{html.escape(tex)}</span>'
        return key

    return _MATH.sub(replace, text), found


def _text_fragment(text: str, options: RenderOptions) -> str:
    math: dict[str, str] = {}
    if options.latex:
        text, math = _protect_math(text)
    if options.md:
        fragment = sanitize(_markdown(options.code).render(text))
    else:
        fragment = f'<div class="plain">{html.escape(text)}</div>'
    for key, value in math.items():
        fragment = fragment.replace(key, value)
    return fragment


def text_html(value: Any, options: RenderOptions = RenderOptions(), *, limit: int = TEXT_LIMIT) -> Markup:
    """Render a message body: text (markdown), OpenAI-style content parts, or any JSON value."""
    if value is None:
        return Markup('<span class="muted">(empty)</span>')
    if isinstance(value, list) and all(isinstance(p, dict) for p in value):
        parts = []
        for part in value:
            text = part.get("text") if isinstance(part.get("text"), str) else None
            if text is not None:
                parts.append(str(text_html(text, options, limit=limit)))
            else:
                parts.append(str(json_html(part, options)))
        return Markup("".join(parts))
    if not isinstance(value, str):
        return json_html(value, options)
    truncated = len(value) > limit
    text = value[:limit] if truncated else value
    if options.raw:
        body = f'<pre class="raw">{html.escape(text)}</pre>'
    else:
        pieces: list[str] = []
        position = 0
        for match in _THINK.finditer(text):
            if match.start() > position:
                pieces.append(_text_fragment(text[position:match.start()], options))
            inner = match.group(1).strip()
            if options.think:
                pieces.append('<details class="think"><summary>thinking</summary>'
                              f'{_text_fragment(inner, options)}</details>')
            else:
                pieces.append(f'<div class="plain think-raw">{html.escape(match.group(0))}</div>')
            position = match.end()
        if position < len(text):
            pieces.append(_text_fragment(text[position:], options))
        body = '<div class="md">' + "".join(pieces) + "</div>"
    if truncated:
        body += f'<p class="muted">… {len(value) - limit:,} more characters (see raw JSON).</p>'
    return Markup(body)


def json_html(value: Any, options: RenderOptions = RenderOptions(), *, limit: int = TEXT_LIMIT) -> Markup:
    text = orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS, default=str).decode()
    truncated = len(text) > limit
    if truncated:
        text = text[:limit]
    inner = _highlight(text, "json") if options.code and not truncated else html.escape(text)
    suffix = '<span class="muted">\n… (truncated)</span>' if truncated else ""
    return Markup(f'<pre class="json hl">{inner}{suffix}</pre>')


def short(value: Any, length: int = 140) -> str:
    """A one-line preview of any value, as plain text (the template escapes it)."""
    if value is None:
        return ""
    if isinstance(value, str):
        text = value
    elif isinstance(value, list) and value and all(isinstance(p, dict) for p in value):
        text = " ".join(str(p.get("text", "")) for p in value)
    else:
        text = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS, default=str).decode()
    text = " ".join(text.split())
    return text if len(text) <= length else text[: length - 1] + "…"


def escape_text(value: Any) -> Markup:
    return escape(value)


_ = JsonLexer  # imported so a missing Pygments lexer fails at import, not on a page
