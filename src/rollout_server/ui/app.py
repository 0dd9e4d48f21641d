"""Mount the UI on the FastAPI app: pages, static files, vendor libraries, session and CSP middleware,
and HTML error pages for UI paths (API paths keep their problem+json answers)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..auth.throttle import SignInThrottle
from ..config import Settings
from ..errors import AppError
from .deps import SignInRequired
from .pages import auth, compare, datasets, rollouts, runs, traces, training
from .pages import settings as settings_pages
from .security import UiMiddleware
from .session import SessionCodec
from .templating import STATIC_DIR, VENDOR_DIR, render

# The only files served from web/node_modules: the libraries' built bundles, nothing else in the tree.
VENDOR_FILES = {
    "htmx.min.js": "htmx.org/dist/htmx.min.js",
    "katex.min.js": "katex/dist/katex.min.js",
}


def _is_api(path: str) -> bool:
    return path.startswith("/api/") or path == "/healthz"


def install_ui(app: FastAPI, settings: Settings) -> None:
    for module in (auth, traces, runs, rollouts, compare, training, datasets, settings_pages):
        app.include_router(module.router, include_in_schema=False)

    @app.get("/static/vendor/{name}", include_in_schema=False)
    def vendor(name: str) -> Response:
        relative = VENDOR_FILES.get(name)
        path = VENDOR_DIR / relative if relative else None
        if path is None or not path.is_file():
            return Response(f"No vendor file {name}; run `make install` (npm ci --prefix web).",
                            status_code=404, media_type="text/plain")
        return FileResponse(path, media_type="text/javascript",
                            headers={"cache-control": "public, max-age=86400"})

    app.mount("/static", StaticFiles(directory=STATIC_DIR, check_dir=False), name="static")

    app.state.sign_in_throttle = SignInThrottle(settings.login_max_failures, settings.login_window_seconds)
    codec = SessionCodec(settings.resolved_secret_key())
    app.add_middleware(UiMiddleware, codec=codec, secure=settings.base_url.startswith("https://"))

    api_app_error = app.exception_handlers.get(AppError)
    api_http_error = app.exception_handlers.get(StarletteHTTPException)

    async def app_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, AppError)
        if _is_api(request.url.path) and api_app_error is not None:
            return await api_app_error(request, exc)  # type: ignore[no-any-return,misc]
        return _error_page(request, exc.status, exc.title, exc.detail)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        if _is_api(request.url.path) and api_http_error is not None:
            return await api_http_error(request, exc)  # type: ignore[no-any-return,misc]
        detail = exc.detail if isinstance(exc.detail, str) else "Error"
        if exc.status_code == 404:
            detail = "There is no such page."
        return _error_page(request, exc.status_code, "Not found" if exc.status_code == 404 else "Error", detail,
                           headers=getattr(exc, "headers", None))

    async def sign_in_required(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, SignInRequired)
        if request.headers.get("hx-request"):
            return Response(status_code=204, headers={"HX-Redirect": f"/login?next={exc.next_url}"})
        return RedirectResponse(f"/login?next={exc.next_url}", status_code=303)

    app.add_exception_handler(AppError, app_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(SignInRequired, sign_in_required)


def _error_page(request: Request, status: int, title: str, detail: str,
                headers: dict[str, Any] | None = None) -> Response:
    response = render(request, "error.html", {"status": status, "title": title, "detail": detail},
                      status_code=status)
    for name, value in (headers or {}).items():
        response.headers[name] = value
    return response
