"""ASGI middleware for the UI: loads and re-signs the session cookie, and puts security headers
(Content-Security-Policy without inline scripts, nosniff, no framing) on every HTML response."""

from __future__ import annotations

from http.cookies import SimpleCookie

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .session import COOKIE_NAME, MAX_AGE_SECONDS, SessionCodec, UiSession

# No 'unsafe-inline' anywhere: scripts and styles come from /static only, so an injected <script> or
# onerror= attribute cannot run even if escaping failed somewhere.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


def _is_ui_path(path: str) -> bool:
    return not (path.startswith("/api/") or path == "/healthz" or path.startswith("/static/"))


class UiMiddleware:
    def __init__(self, app: ASGIApp, *, codec: SessionCodec, secure: bool) -> None:
        self.app = app
        self.codec = codec
        self.secure = secure

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not _is_ui_path(scope["path"]):
            await self.app(scope, receive, send)
            return
        cookie_value = None
        for name, value in scope.get("headers", []):
            if name == b"cookie":
                jar: SimpleCookie = SimpleCookie()
                try:
                    jar.load(value.decode("latin-1"))
                except Exception:  # a malformed Cookie header is just "no session"
                    continue
                if COOKIE_NAME in jar:
                    cookie_value = jar[COOKIE_NAME].value
        session = self.codec.loads(cookie_value)
        if session is None:
            session = UiSession(changed=True)
        scope.setdefault("state", {})["ui_session"] = session

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                if headers.get("content-type", "").startswith("text/html"):
                    headers["content-security-policy"] = CSP
                    headers["x-content-type-options"] = "nosniff"
                    headers["x-frame-options"] = "DENY"
                    headers["referrer-policy"] = "same-origin"
                    headers.setdefault("cache-control", "no-store")
                if session.changed:
                    headers.append("set-cookie", self._cookie(session))
            await send(message)

        await self.app(scope, receive, send_wrapper)

    def _cookie(self, session: UiSession) -> str:
        value = self.codec.dumps(session)
        parts = [f"{COOKIE_NAME}={value}", "Path=/", "HttpOnly", "SameSite=Lax", f"Max-Age={MAX_AGE_SECONDS}"]
        if self.secure:
            parts.append("Secure")
        return "; ".join(parts)
