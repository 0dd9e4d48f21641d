"""Application factory: settings → context (database, blob store) → FastAPI app with API and UI."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from starlette.concurrency import run_in_threadpool

from . import __version__
from .api.router import api_router
from .bootstrap import banner, ensure_initial_setup
from .common import heap
from .config import Settings, get_settings
from .context import AppContext
from .db.migrate import upgrade
from .demo import create_demo_content
from .errors import install_error_handlers
from .limits import BodySizeLimit
from .ui import install_ui

API_DESCRIPTION = """Record each attempt at a task (a rollout) once; read it as a trace, score it, export it.

Authenticate with `Authorization: Bearer <api key>`. Errors are RFC 9457 problem details
(`application/problem+json`) whose `errors` list names the offending fields. Lists are pages:
pass `next_cursor` back as `cursor`.
"""


def create_app(settings: Settings | None = None, *, context: AppContext | None = None) -> FastAPI:
    settings = settings or (context.settings if context else get_settings())

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        owned = context is None
        if owned and settings.auto_migrate:
            await run_in_threadpool(upgrade, settings.resolved_database_url)
        ctx = context or AppContext.from_settings(settings)
        app.state.ctx = ctx
        if owned:
            first = await run_in_threadpool(ensure_initial_setup, ctx)
            if first and settings.demo:
                await _make_demo(app, first.api_key)
            print(banner(settings, first), flush=True)
        worker = None
        if owned and (settings.worker_in_process or ctx.db.dialect == "sqlite"):
            # The job queue's drainer (scorers, S3 exports); PostgreSQL deployments may run
            # `rollout-server worker` processes instead and set ROLLOUT_WORKER_IN_PROCESS=0.
            from .scoring.worker import Worker

            worker = Worker(ctx).start()
        if owned:
            heap.settle()  # start-up is done: the collector stops re-scanning what it loaded (common/heap.py)
        try:
            yield
        finally:
            if worker is not None:
                await run_in_threadpool(worker.stop)
            if owned:
                ctx.close()

    app = FastAPI(
        title="Rollout",
        version=__version__,
        description=API_DESCRIPTION,
        lifespan=lifespan,
    )
    if context is not None:
        app.state.ctx = context
    install_error_handlers(app)

    def limit_for(path: str) -> int:
        if path.startswith("/api/v1/files") or path == "/api/v1/imports":
            return settings.max_upload_bytes
        if path == "/api/v1/ingest" or path.endswith("/events"):
            return settings.max_ingest_bytes
        return settings.max_request_bytes

    app.add_middleware(BodySizeLimit, limit_for=limit_for)
    origins = [origin.strip() for origin in settings.cors_origins.split(",") if origin.strip()]
    if origins:
        # Browsers running the TypeScript SDK on another origin; API keys travel in a header, not cookies.
        app.add_middleware(
            CORSMiddleware, allow_origins=origins, allow_methods=["GET", "POST", "DELETE", "OPTIONS"],
            allow_headers=["authorization", "content-type"], expose_headers=["retry-after"], max_age=600,
        )

    @app.get("/healthz", tags=["health"])
    def healthz() -> dict[str, str]:
        """Liveness: the process answers."""
        return {"status": "ok", "version": __version__}

    app.include_router(api_router)
    # Web UI: pages, static files, session cookie, CSRF and the Content-Security-Policy header.
    install_ui(app, settings)
    return app


async def _make_demo(app: FastAPI, api_key: str) -> None:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://demo",
                                 headers={"authorization": f"Bearer {api_key}"}) as client:
        await create_demo_content(client)
