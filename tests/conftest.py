"""Shared fixtures: the throwaway PostgreSQL and S3 servers, migrated database templates, an app per test.

Database tests take the `db_url` fixture, parametrised over SQLite and PostgreSQL; each test gets its own
database copied from a migrated template, so tests never share state.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from rollout_server.config import Settings
from rollout_server.context import AppContext
from rollout_server.db.migrate import upgrade
from tests.support.ci import fail_on_skips, require_all
from tests.support.live_server import LiveServer
from tests.support.postgres import PostgresServer, postgres_available_reason
from tests.support.s3 import S3Server, s3_available_reason


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if require_all():
        fail_on_skips(session)


def _unavailable(reason: str) -> None:
    if require_all():
        pytest.fail(f"required test dependency unavailable: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    reason = postgres_available_reason()
    if reason:
        _unavailable(reason)
    server = PostgresServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    reason = s3_available_reason()
    if reason:
        _unavailable(reason)
    server = S3Server().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "template.db"
    upgrade(f"sqlite:///{path}")
    return path


@pytest.fixture(scope="session")
def postgres_template(postgres_server: PostgresServer) -> str:
    name = "rollout_template"
    url = postgres_server.create_database(name)
    upgrade(url)
    return name


def _fresh_sqlite(template: Path, folder: Path) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "rollout.db"
    shutil.copyfile(template, target)
    return f"sqlite:///{target}"


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A migrated, empty database of its own for this test, on SQLite and on PostgreSQL."""
    if request.param == "sqlite":
        yield _fresh_sqlite(request.getfixturevalue("sqlite_template"), tmp_path / "db")
        return
    server: PostgresServer = request.getfixturevalue("postgres_server")
    template: str = request.getfixturevalue("postgres_template")
    name = f"t_{uuid.uuid4().hex[:12]}"
    url = server.create_database(name, template=template)
    yield url
    server.drop_database(name)


@pytest.fixture
def sqlite_url(sqlite_template: Path, tmp_path: Path) -> str:
    return _fresh_sqlite(sqlite_template, tmp_path / "db")


def make_settings(db_url: str, data_dir: Path, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "data_dir": data_dir, "database_url": db_url, "storage_url": (data_dir / "files").as_uri(),
        "demo": False, "auto_migrate": False, "public_url": "http://testserver",
    }
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


@pytest.fixture
def ctx(db_url: str, tmp_path: Path) -> Iterator[AppContext]:
    context = AppContext.from_settings(make_settings(db_url, tmp_path / "data"))
    yield context
    context.close()


@dataclass
class Tenant:
    """A workspace and a client holding its API key."""

    workspace_id: str
    api_key: str
    client: httpx.AsyncClient


def create_tenant(context: AppContext, name: str | None = None) -> tuple[str, str]:
    from rollout_server.workspaces import service

    with context.db.transaction() as session:
        workspace = service.create_workspace(session, name or f"ws-{uuid.uuid4().hex[:8]}")
        key = service.create_api_key(session, workspace.id, "test key")
    return workspace.id, key.secret


@pytest.fixture
async def api(ctx: AppContext) -> AsyncIterator[Tenant]:
    """A client for the ASGI app, authenticated into a fresh workspace."""
    from rollout_server.app import create_app

    app = create_app(context=ctx)
    workspace_id, secret = create_tenant(ctx, "alpha")
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver",
                                 headers={"authorization": f"Bearer {secret}"}) as client:
        yield Tenant(workspace_id, secret, client)


@pytest.fixture
async def other(ctx: AppContext, api: Tenant) -> AsyncIterator[Tenant]:
    """A second workspace on the same server: its keys and IDs must never reach `api`'s data."""
    from rollout_server.app import create_app

    app = create_app(context=ctx)
    workspace_id, secret = create_tenant(ctx, "beta")
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver",
                                 headers={"authorization": f"Bearer {secret}"}) as client:
        yield Tenant(workspace_id, secret, client)


# -- real uvicorn processes ------------------------------------------------------------------------------

@dataclass
class Live:
    """A running server process and an API key for its init workspace."""

    server: LiveServer
    api_key: str
    data_dir: Path

    @property
    def base_url(self) -> str:
        return self.server.base_url

    def client(self, api_key: str | None = None) -> httpx.Client:
        return httpx.Client(base_url=self.base_url, timeout=30, trust_env=False,
                            headers={"authorization": f"Bearer {api_key or self.api_key}"})


def start_live(data_dir: Path, *, database_url: str | None = None, **env: str) -> Live:
    api_key = "rk_test_" + uuid.uuid4().hex
    values = {
        "ROLLOUT_DATA_DIR": str(data_dir),
        "ROLLOUT_INIT_API_KEY": api_key,
        "ROLLOUT_DEMO": "0",
        "ROLLOUT_INIT_ADMIN_PASSWORD": "admin-password",
    }
    if database_url:
        values["ROLLOUT_DATABASE_URL"] = database_url
    values.update(env)
    server = LiveServer(values).start()
    return Live(server=server, api_key=api_key, data_dir=data_dir)


@pytest.fixture(scope="session")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    """One real server (SQLite) shared by the session; tests create their own uniquely named data."""
    live = start_live(tmp_path_factory.mktemp("live"))
    yield live
    live.server.close()


@pytest.fixture
def live_server_factory(tmp_path: Path) -> Iterator[Callable[..., Live]]:
    """Servers of a test's own (for fault tests that stop and restart them)."""
    started: list[Live] = []

    def make(**env: str) -> Live:
        live = start_live(tmp_path / f"live{len(started)}", **env)
        started.append(live)
        return live

    yield make
    for live in started:
        live.server.close()
