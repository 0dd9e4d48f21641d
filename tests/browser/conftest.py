"""Browser fixtures: Debian's Chromium driven by Playwright (never `playwright install`), a live server
seeded through the REST API, and a signed-in page. Chromium missing: skip locally, fail in CI."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, update

from rollout_server.models import Rollout
from tests.conftest import Live, _unavailable, start_live
from tests.ui.seed import Seeded, seed

CHROMIUM = os.environ.get("ROLLOUT_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
ADMIN_EMAIL = "admin@rollout.local"
ADMIN_PASSWORD = "admin-password"



def chromium_missing_reason() -> str | None:
    if not (Path(CHROMIUM).exists() or shutil.which("chromium")):
        return f"Chromium not found at {CHROMIUM}: apt-get install chromium (.ci/run does)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install playwright; never `playwright install`)"
    return None


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    reason = chromium_missing_reason()
    if reason:
        _unavailable(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield instance
        instance.close()


@dataclass
class SeededLive:
    live: Live
    data: Seeded
    workspace_id: str

    @property
    def base_url(self) -> str:
        return self.live.base_url


def _call(client: httpx.AsyncClient) -> Any:
    async def call(method: str, path: str, **kwargs: Any) -> Any:
        response = await client.request(method, path, **kwargs)
        assert response.status_code < 300, f"{method} {path}: {response.status_code} {response.text[:500]}"
        return response.json()

    return call


async def _seed(live: Live) -> Seeded:
    async with httpx.AsyncClient(base_url=live.base_url, timeout=60, trust_env=False,
                                 headers={"authorization": f"Bearer {live.api_key}"}) as client:
        return await seed(_call(client), prefix="b-")


def mark_discarded(live: Live, run_number: int) -> None:
    """Discards come from the scoring job in production; the test sets two directly in the server's database."""
    with live.client() as client:
        items = client.get("/api/v1/rollouts", params={"run": str(run_number), "limit": 1000}).json()["items"]
    ids = [r["id"] for r in items if r["step"] == 1 and r["group_key"] == "prompt-0"]
    engine = create_engine(f"sqlite:///{live.data_dir / 'rollout.db'}")
    with engine.begin() as connection:
        connection.execute(update(Rollout).where(Rollout.id.in_(ids)).values(discarded=True,
                                                                            discard_reason="zero advantage"))
    engine.dispose()


@pytest.fixture(scope="package")
def ui_server(tmp_path_factory: pytest.TempPathFactory, browser: Any) -> Iterator[Live]:
    """A server of the browser tests' own, so counts on its pages are not disturbed by other tests' data."""
    live = start_live(tmp_path_factory.mktemp("ui-live"))
    yield live
    live.server.close()


@pytest.fixture(scope="package")
def seeded_live(ui_server: Live) -> SeededLive:
    live_server = ui_server
    # Playwright's sync API keeps an event loop on this thread; seed from another one.
    with ThreadPoolExecutor(1) as pool:
        data = pool.submit(asyncio.run, _seed(live_server)).result()
    mark_discarded(live_server, data.training_run)
    with live_server.client() as client:
        rollout = client.get(f"/api/v1/rollouts/{data.rollout_ids[0]}", params={"events_limit": 0}).json()
    workspace_id = rollout["url"].split("/w/")[1].split("/")[0]
    return SeededLive(live=live_server, data=data, workspace_id=workspace_id)


def sign_in(page: Any, base_url: str, email: str = ADMIN_EMAIL, password: str = ADMIN_PASSWORD) -> None:
    page.goto(f"{base_url}/login")
    page.fill("input[name=email]", email)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_load_state("networkidle")


class Watch:
    """Collects everything that would show a script ran where it should not: dialogs, console errors
    about CSP are fine (they prove blocking), but any console message from a payload is not."""

    def __init__(self, page: Any) -> None:
        self.dialogs: list[str] = []
        self.console: list[str] = []
        self.page_errors: list[str] = []
        page.on("dialog", lambda dialog: (self.dialogs.append(dialog.message), dialog.dismiss()))
        page.on("console", lambda message: self.console.append(message.text))
        page.on("pageerror", lambda error: self.page_errors.append(str(error)))


@pytest.fixture
def page(browser: Any, seeded_live: SeededLive) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1440, "height": 900}, base_url=seeded_live.base_url)
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.watch = Watch(page)  # type: ignore[attr-defined]
    yield page
    context.close()


def screenshot(page: Any, name: str, *, full_page: bool = False) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=full_page)
