"""Signed session cookies: who is signed in and the CSRF token of their forms.

The cookie holds a small JSON payload and an HMAC-SHA256 over it keyed from the server secret, so it
cannot be forged or edited; it is HttpOnly, SameSite=Lax, and Secure when the public URL is https.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass, field

import orjson

COOKIE_NAME = "rollout_session"
MAX_AGE_SECONDS = 14 * 24 * 3600


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass
class UiSession:
    user_id: str | None = None
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    issued: int = field(default_factory=lambda: int(time.time()))
    # Flash message shown once on the next page (e.g. "API key created").
    flash: str | None = None
    changed: bool = False
    # Which password the user signed in with (`password_mark`): a new password ends the session.
    password: str | None = None

    def payload(self) -> dict[str, object]:
        data: dict[str, object] = {"u": self.user_id, "c": self.csrf, "t": self.issued}
        if self.flash:
            data["f"] = self.flash
        if self.password:
            data["p"] = self.password
        return data

    def sign_in(self, user_id: str, password_hash: str) -> None:
        """Start a signed-in session in place: a new CSRF token, so one planted before it is worthless."""
        fresh = UiSession(user_id=user_id)
        self.user_id, self.csrf, self.issued, self.changed = user_id, fresh.csrf, fresh.issued, True
        self.password = password_mark(password_hash)

    def signed_in_with(self, password_hash: str | None) -> bool:
        return password_hash is not None and self.password is not None and \
            hmac.compare_digest(self.password, password_mark(password_hash))


def password_mark(password_hash: str) -> str:
    """A short fingerprint of the stored password hash (salted argon2, so every new password gives a new one)."""
    return hashlib.sha256(password_hash.encode()).hexdigest()[:16]


class SessionCodec:
    def __init__(self, secret: str) -> None:
        # A key of its own, so the session signature never equals another use of the secret.
        self._key = hmac.new(secret.encode(), b"rollout-ui-session-v1", hashlib.sha256).digest()

    def _sign(self, body: str) -> str:
        return _b64(hmac.new(self._key, body.encode(), hashlib.sha256).digest())

    def dumps(self, session: UiSession) -> str:
        body = _b64(orjson.dumps(session.payload()))
        return f"{body}.{self._sign(body)}"

    def loads(self, value: str | None) -> UiSession | None:
        if not value or "." not in value:
            return None
        body, _, signature = value.partition(".")
        if not hmac.compare_digest(signature, self._sign(body)):
            return None
        try:
            data = orjson.loads(_unb64(body))
        except (ValueError, orjson.JSONDecodeError):
            return None
        if not isinstance(data, dict) or not isinstance(data.get("c"), str) or not isinstance(data.get("t"), int):
            return None
        if data["t"] + MAX_AGE_SECONDS < time.time():
            return None
        user_id, flash, password = data.get("u"), data.get("f"), data.get("p")
        return UiSession(user_id=user_id if isinstance(user_id, str) else None, csrf=data["c"], issued=data["t"],
                         flash=flash if isinstance(flash, str) else None,
                         password=password if isinstance(password, str) else None)


def csrf_matches(session: UiSession, token: str | None) -> bool:
    return bool(token) and hmac.compare_digest(session.csrf.encode(), (token or "").encode())
