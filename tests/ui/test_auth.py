"""Sign-in, the session cookie, sign-out, and where signed-out visitors are sent."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx

from rollout_server.app import create_app
from rollout_server.auth.throttle import SignInThrottle
from rollout_server.context import AppContext
from tests.conftest import make_settings
from tests.ui.conftest import PASSWORD, World, csrf_of, login


async def test_signed_out_visitor_is_sent_to_sign_in(world: World) -> None:
    async with world.client() as client:
        response = await client.get(f"/w/{world.workspace_id}/traces?status=failed")
        assert response.status_code == 303
        assert response.headers["location"] == f"/login?next=/w/{world.workspace_id}/traces?status=failed"
        assert (await client.get("/")).headers["location"].startswith("/login")


async def test_sign_in_sets_a_secure_session_cookie_and_lands_on_traces(world: World) -> None:
    async with world.client() as client:
        token = await csrf_of(client)
        response = await client.post("/login", data={"email": "OWNER@alpha.test", "password": PASSWORD,
                                                     "csrf_token": token, "next": "/"})
        assert response.status_code == 303
        cookie = response.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Secure" not in cookie  # http public URL
        home = await client.get("/")
        assert home.headers["location"] == f"/w/{world.workspace_id}/traces"
        page = await client.get(home.headers["location"])
        assert page.status_code == 200 and "owner@alpha.test" in page.text


async def test_cookie_is_secure_behind_https(ctx: AppContext, tmp_path: Path) -> None:
    settings = make_settings(ctx.settings.resolved_database_url, tmp_path / "d", public_url="https://rollout.example")
    app = create_app(settings, context=AppContext(settings=settings, db=ctx.db, store=ctx.store))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="https://testserver") as client:
        response = await client.get("/login")
        assert "Secure" in response.headers["set-cookie"]


async def test_wrong_password_and_unknown_email_answer_the_same(world: World) -> None:
    async with world.client() as client:
        token = await csrf_of(client)
        wrong = await client.post("/login", data={"email": "owner@alpha.test", "password": "nope-nope",
                                                  "csrf_token": token})
        unknown = await client.post("/login", data={"email": "ghost@alpha.test", "password": "nope-nope",
                                                    "csrf_token": token})
        assert wrong.status_code == unknown.status_code == 401
        assert "Wrong email or password." in wrong.text and "Wrong email or password." in unknown.text
        assert (await client.get(f"/w/{world.workspace_id}/traces")).status_code == 303


async def test_sign_in_never_redirects_off_site(world: World) -> None:
    async with world.client() as client:
        token = await csrf_of(client)
        for target in ("https://evil.example/", "//evil.example/x", "/\\evil.example"):
            response = await client.post("/login", data={"email": "owner@alpha.test", "password": PASSWORD,
                                                         "csrf_token": token, "next": target})
            assert response.headers["location"] == "/", target
            token = await csrf_of(client)


async def test_sign_out_ends_the_session_and_rotates_the_token(world: World) -> None:
    async with world.client() as client:
        await login(client, "owner@alpha.test", PASSWORD)
        token = await csrf_of(client, f"/w/{world.workspace_id}/settings")
        response = await client.post("/logout", data={"csrf_token": token})
        assert response.status_code == 303 and response.headers["location"] == "/login"
        assert (await client.get(f"/w/{world.workspace_id}/traces")).status_code == 303
        assert await csrf_of(client) != token


async def test_a_forged_or_edited_cookie_is_ignored(world: World) -> None:
    async with world.client() as client:
        await login(client, "viewer@alpha.test", PASSWORD)
        value = client.cookies.get("rollout_session")
        assert value
        body, _, signature = value.partition(".")
        client.cookies.set("rollout_session", body + "." + signature[::-1])
        assert (await client.get(f"/w/{world.workspace_id}/traces")).status_code == 303


async def test_workspace_picker_lists_only_my_workspaces(world: World, outsider: httpx.AsyncClient) -> None:
    page = await outsider.get("/workspaces")
    assert "beta" in page.text and "alpha" not in page.text


async def test_repeated_wrong_passwords_pause_that_accounts_sign_in(world: World) -> None:
    now = [1000.0]
    world.app.state.sign_in_throttle = SignInThrottle(5, 300, clock=lambda: now[0])
    async with world.client() as client:
        async def attempt(email: str, password: str) -> httpx.Response:
            return await client.post("/login", data={"email": email, "password": password,
                                                     "csrf_token": await csrf_of(client), "next": "/"})

        for _ in range(5):
            assert (await attempt("owner@alpha.test", "guess-guess")).status_code == 401
        paused = await attempt("owner@alpha.test", PASSWORD)  # even the right password waits
        assert paused.status_code == 429
        assert 0 < int(paused.headers["retry-after"]) <= 300
        assert "Too many failed sign-ins. Try again in 5 minutes." in paused.text
        assert (await attempt("admin@alpha.test", PASSWORD)).status_code == 303  # other accounts are not held
        now[0] += 301
        assert (await attempt("owner@alpha.test", PASSWORD)).status_code == 303


def test_throttle_counts_an_address_across_accounts_and_forgets_on_success() -> None:
    now = [0.0]
    throttle = SignInThrottle(2, 60, clock=lambda: now[0])
    for n in range(8):  # one address, many accounts: 4 x 2 tries
        assert throttle.retry_after(f"user{n}@x.test", "10.0.0.1") is None
        throttle.failed(f"user{n}@x.test", "10.0.0.1")
    assert throttle.retry_after("fresh@x.test", "10.0.0.1") == 60
    assert throttle.retry_after("fresh@x.test", "10.0.0.2") is None
    throttle.failed("me@x.test", None)
    throttle.succeeded("me@x.test")
    throttle.failed("me@x.test", None)
    assert throttle.retry_after("me@x.test", None) is None  # one failure since the success
    now[0] = 61
    assert throttle.retry_after("fresh@x.test", "10.0.0.1") is None


async def test_changing_my_password_keeps_me_signed_in_and_signs_out_other_browsers(world: World) -> None:
    here, elsewhere = await world.signed_in("owner@alpha.test"), await world.signed_in("owner@alpha.test")
    try:
        async def change(current: str, new: str, repeat: str | None = None, token: str | None = None) -> httpx.Response:
            token = token if token is not None else await csrf_of(here, "/account")
            return await here.post("/account/password", data={"current": current, "new": new,
                                                              "repeat": new if repeat is None else repeat,
                                                              "csrf_token": token})

        assert (await change("not-the-password", "brand-new-pass")).status_code == 403
        assert (await change(PASSWORD, "brand-new-pass", "brand-new-typo")).status_code == 422
        assert (await change(PASSWORD, "short")).status_code == 422
        assert (await change(PASSWORD, "brand-new-pass", token="forged")).status_code == 403
        done = await change(PASSWORD, "brand-new-pass")
        assert done.status_code == 303 and done.headers["location"] == "/account"
        page = await here.get("/account")
        assert page.status_code == 200 and "Password changed." in page.text
        assert (await here.get(f"/w/{world.workspace_id}/traces")).status_code == 200
        assert (await elsewhere.get(f"/w/{world.workspace_id}/traces")).status_code == 303  # signed out
    finally:
        await here.aclose()
        await elsewhere.aclose()
    async with world.client() as client:
        token = await csrf_of(client)
        old = await client.post("/login", data={"email": "owner@alpha.test", "password": PASSWORD,
                                               "csrf_token": token})
        assert old.status_code == 401
        await login(client, "owner@alpha.test", "brand-new-pass")


async def test_an_operator_sets_a_forgotten_password_from_the_command_line(world: World, db_url: str,
                                                                         tmp_path: Path) -> None:
    signed_in = await world.signed_in("admin@alpha.test")
    env = {**os.environ, "ROLLOUT_DATABASE_URL": db_url, "ROLLOUT_DATA_DIR": str(tmp_path / "cli")}
    command = [sys.executable, "-m", "rollout_server.cli", "users", "set-password", "--email", "ADMIN@alpha.test"]
    short = subprocess.run([*command, "--password", "short"], env=env, capture_output=True, text=True, timeout=120)
    assert short.returncode != 0 and "8 characters" in short.stderr + short.stdout
    done = subprocess.run([*command, "--password", "operator-chosen"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    unknown = subprocess.run([*command[:-1], "ghost@alpha.test", "--password", "whatever-long"], env=env,
                             capture_output=True, text=True, timeout=120)
    assert unknown.returncode != 0 and "No user" in unknown.stderr + unknown.stdout
    assert (await signed_in.get(f"/w/{world.workspace_id}/traces")).status_code == 303
    await signed_in.aclose()
    async with world.client() as client:
        await login(client, "admin@alpha.test", "operator-chosen")
