"""The TypeScript SDK against live servers: its `node --test` suite, and its seed loop compared with Python's.

The package in sdk-typescript/ is installed (`npm ci`, only when node_modules is missing or older than
the lock) and built (`npm run build`, only when a source is newer than dist/). Its tests read the server
from ROLLOUT_BASE_URL / ROLLOUT_API_KEY, and stop and start it through ROLLOUT_TEST_CONTROL_URL, a small
HTTP hook served here that calls LiveServer.stop() / start().
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from http.server import BaseHTTPRequestHandler, SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import Live
from tests.support.ci import require_all

ROOT = Path(__file__).resolve().parents[2]
SDK = ROOT / "sdk-typescript"
EXAMPLES = ROOT / "examples" / "typescript"
NODE_TIMEOUT = 300

pytestmark = pytest.mark.live


def _node_missing_reason() -> str | None:
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        return f"the TypeScript SDK tests need {' and '.join(missing)} (Node >= 20) on PATH"
    version = subprocess.run(["node", "--version"], capture_output=True, text=True, check=False).stdout.strip()
    match = re.match(r"v(\d+)\.", version)
    if not match or int(match.group(1)) < 20:
        return f"the TypeScript SDK needs Node >= 20, found {version or 'an unknown version'}"
    return None


def _run(
    command: list[str], cwd: Path, *, env: dict[str, str] | None = None, timeout: float = NODE_TIMEOUT
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    if result.returncode != 0:
        pytest.fail(
            f"`{' '.join(command)}` in {cwd} exited with {result.returncode}:\n"
            f"{result.stdout[-20_000:]}\n{result.stderr[-20_000:]}",
            pytrace=False,
        )
    return result


def _newest_mtime(paths: list[Path]) -> float:
    return max((p.stat().st_mtime for p in paths if p.exists()), default=0.0)


@pytest.fixture(scope="module")
def built_sdk() -> Path:
    """sdk-typescript with its dev dependencies installed and dist/ built."""
    reason = _node_missing_reason()
    if reason:
        if require_all():
            pytest.fail(f"required test dependency unavailable: {reason}")
        pytest.skip(reason)
    # The same stamp as the Makefile's: npm ci again only when package.json or the lock is newer.
    stamp = SDK / "node_modules" / ".installed"
    if not stamp.exists() or stamp.stat().st_mtime < _newest_mtime([SDK / "package.json", SDK / "package-lock.json"]):
        _run(["npm", "ci", "--no-audit", "--no-fund"], SDK)
        stamp.touch()
    sources = [*SDK.glob("src/**/*.ts"), SDK / "tsconfig.json", SDK / "package.json"]
    built = SDK / "dist" / "index.js"
    if not built.exists() or built.stat().st_mtime < _newest_mtime(sources):
        _run(["npm", "run", "build"], SDK)
    return SDK


class _ControlHandler(BaseHTTPRequestHandler):
    live: Live

    def do_POST(self) -> None:
        actions: dict[str, Callable[[], Any]] = {
            "/stop": self.live.server.stop,
            "/start": self.live.server.start,
            "/kill": self.live.server.kill,
        }
        action = actions.get(self.path)
        if action is None:
            self.send_error(404, f"no control action {self.path}; use /stop, /start or /kill")
            return
        try:
            action()
        except Exception as error:
            self.send_error(500, f"{self.path} failed: {error}")
            return
        body = b"ok\n"
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # keep pytest output clean
        pass


@contextmanager
def _control_server(live: Live) -> Iterator[str]:
    """An HTTP hook for the node tests: POST /stop, /start or /kill acts on the live server."""
    handler = type("ControlHandler", (_ControlHandler,), {"live": live})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _node_env(live: Live, tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {
        **os.environ,
        "ROLLOUT_BASE_URL": live.base_url,
        "ROLLOUT_API_KEY": live.api_key,
        "ROLLOUT_FILES_CACHE_DIR": str(tmp_path / "files-cache"),
        "NO_COLOR": "1",
    }
    env.update(extra)
    return env


def test_typescript_sdk_suite_against_a_live_server(
    built_sdk: Path, live_server_factory: Callable[..., Live], tmp_path: Path
) -> None:
    """`node --test` over sdk-typescript/test: unit rules, seed loop, 20 concurrent rollouts, an outage,
    and wrapOpenAI with the real `openai` package against a fake endpoint."""
    live = live_server_factory()
    tests = sorted(str(p.relative_to(built_sdk)) for p in (built_sdk / "test").glob("*.test.mjs"))
    assert tests, "no test files in sdk-typescript/test"
    with _control_server(live) as control_url:
        result = subprocess.run(
            ["node", "--test", "--test-concurrency=1", "--test-reporter=spec", *tests],
            cwd=built_sdk,
            env=_node_env(live, tmp_path, ROLLOUT_TEST_CONTROL_URL=control_url),
            capture_output=True,
            text=True,
            timeout=NODE_TIMEOUT,
            check=False,
        )
    output = result.stdout + result.stderr
    assert result.returncode == 0, (
        f"node --test failed ({result.returncode}):\n{output[-30_000:]}\nserver log:\n{live.server.log_text()[-5_000:]}"
    )
    assert re.search(r"\bskipped 0\b", output), f"some TypeScript tests were skipped:\n{output[-10_000:]}"
    print(output[-6_000:])  # the per-test summary, for `pytest -s`


# -- the same seed loop in both languages, compared through the API ------------------------------------------

PAGES = (1, 2, 9)
TOPICS = ("attention", "multi-head attention", "results on WMT 2014")
PAPER = b"%PDF-1.4\n" + "\f".join(f"page {i + 1}: {topic}" for i, topic in enumerate(TOPICS)).encode()


def _tasks() -> list[dict[str, Any]]:
    return [
        {"key": f"page-{page}", "instruction": f"Summarise page {page} of the paper", "input": {"page": page}}
        for page in PAGES
    ]


def _read_page(path: Path, page: int) -> str:
    pages = path.read_bytes().decode("latin-1").split("\f")
    if page > len(pages):
        raise ValueError(f"page {page} is out of range (the paper has {len(pages)} pages)")
    return pages[page - 1]


def _python_sdk_loop(live: Live, dataset: str, tmp_path: Path) -> int:
    """The example's loop with the Python SDK (the design's seed loop, continuing after a failure)."""
    import rollout

    client = rollout.Client(
        base_url=live.base_url,
        api_key=live.api_key,
        spool_dir=tmp_path / "spool",
        files_cache_dir=tmp_path / "py-files",
    )

    def answer_task(attempt: Any, instruction: str, input: dict[str, Any] | None, files: list[Path]) -> str:
        assert input is not None
        tool = attempt.tool_call("read_pdf", {"page": input["page"]})
        try:
            text = _read_page(files[0], input["page"])
        except ValueError:
            tool.error(f"no page {input['page']}")
            raise
        tool.result(text)
        summary = f"{instruction}: {text[text.index(': ') + 2 :]}"
        attempt.message(summary, role="assistant")
        return summary

    try:
        tasks = [{**task, "files": [("paper.pdf", PAPER, "application/pdf")]} for task in _tasks()]
        client.create_dataset(dataset, tasks=tasks)
        run = client.start_run(dataset, workflow_name="Paper QA", group_id="thread-42")
        for task in run.tasks:
            attempt = run.start_rollout(task)
            files = attempt.materialize_files()
            try:
                attempt.message("Starting task", role="system")
                result = answer_task(attempt, task.task.instruction, task.task.input, files)
                attempt.finish(output=result)
            except Exception as error:
                attempt.error(str(error))
                attempt.finish(status="failed", error=str(error))
        assert client.flush(30)
        run.finish()
        return int(run.number)
    finally:
        client.close()


def _httpx_loop(live: Live, dataset: str, tmp_path: Path) -> int:
    """The same loop with plain REST calls (used when the Python SDK is not importable)."""
    with live.client() as http:
        file = http.post("/api/v1/files", files={"file": ("paper.pdf", PAPER, "application/pdf")}).json()
        tasks = [{**task, "files": [file["id"]]} for task in _tasks()]
        http.post("/api/v1/datasets", json={"name": dataset, "tasks": tasks}).raise_for_status()
        run = http.post(
            "/api/v1/runs", json={"dataset": dataset, "workflow_name": "Paper QA", "group_id": "thread-42"}
        ).json()
        for item in http.get(f"/api/v1/runs/{run['id']}/tasks").json()["items"]:
            task = item["task"]
            attempt = http.post(f"/api/v1/runs/{run['id']}/rollouts", json={"task_id": task["id"]}).json()
            local = tmp_path / "httpx-paper.pdf"
            local.write_bytes(http.get(task["files"][0]["download_path"]).content)
            call_id = f"call_{uuid.uuid4().hex[:8]}"
            events: list[dict[str, Any]] = [
                {"kind": "message", "role": "system", "content": "Starting task"},
                {
                    "kind": "tool_call",
                    "name": "read_pdf",
                    "call_id": call_id,
                    "arguments": {"page": task["input"]["page"]},
                },
            ]
            finish: dict[str, Any]
            try:
                text = _read_page(local, task["input"]["page"])
                summary = f"{task['instruction']}: {text[text.index(': ') + 2 :]}"
                events += [
                    {"kind": "tool_result", "name": "read_pdf", "call_id": call_id, "output": text, "is_error": False},
                    {"kind": "message", "role": "assistant", "content": summary},
                ]
                finish = {"output": summary}
            except ValueError as error:
                events += [
                    {
                        "kind": "tool_result",
                        "name": "read_pdf",
                        "call_id": call_id,
                        "output": f"no page {task['input']['page']}",
                        "is_error": True,
                    },
                    {"kind": "error", "message": str(error)},
                ]
                finish = {"status": "failed", "error": str(error)}
            for seq, event in enumerate(events, start=1):
                event.update(id=f"ev_{uuid.uuid4().hex}", seq=seq)
            http.post(f"/api/v1/rollouts/{attempt['id']}/events", json={"events": events}).raise_for_status()
            http.post(f"/api/v1/rollouts/{attempt['id']}/finish", json=finish).raise_for_status()
        http.post(f"/api/v1/runs/{run['id']}/finish", json={}).raise_for_status()
        return int(run["number"])


def _run_shape(http: httpx.Client, number: int) -> dict[str, Any]:
    """What must match between the languages: the run, its attempts, and each trace's event sequence."""
    run = http.get(f"/api/v1/runs/{number}").json()
    rollouts = http.get("/api/v1/rollouts", params={"run": number, "limit": 1000}).json()["items"]
    attempts = []
    for rollout in sorted(rollouts, key=lambda r: r["attempt"]):
        events = http.get(f"/api/v1/rollouts/{rollout['id']}/events", params={"limit": 1000}).json()["items"]
        attempts.append(
            {
                "attempt": rollout["attempt"],
                "task_key": rollout["task_key"],
                "repeat_index": rollout["repeat_index"],
                "status": rollout["status"],
                "output": rollout["output"],
                "error": rollout["error"],
                "events": [
                    (
                        e["seq"],
                        e["kind"],
                        e.get("role"),
                        e.get("name") if e["kind"].startswith("tool") else None,
                        e.get("is_error"),
                        e.get("content") if e["kind"] == "message" else None,
                    )
                    for e in events
                ],
            }
        )
    return {
        "status": run["status"],
        "workflow_name": run["workflow_name"],
        "group_id": run["group_id"],
        "task_count": run["task_count"],
        "by_status": run["aggregates"]["by_status"],
        "attempts": attempts,
    }


def test_typescript_seed_loop_has_the_same_run_shape_as_python(
    built_sdk: Path, live_server: Live, tmp_path: Path
) -> None:
    """examples/typescript/seed-loop.mjs and the same loop in Python give runs that read the same through the API."""
    if not (EXAMPLES / "node_modules" / "@rollout" / "sdk").exists():
        _run(["npm", "install", "--no-audit", "--no-fund", "--no-package-lock"], EXAMPLES)
    suffix = uuid.uuid4().hex[:8]
    result = _run(
        ["node", "seed-loop.mjs", f"paper-ts-{suffix}"], EXAMPLES, env=_node_env(live_server, tmp_path), timeout=120
    )
    match = re.search(r"^run (\d+):", result.stdout, re.MULTILINE)
    assert match, f"the example did not print its run:\n{result.stdout}\n{result.stderr}"
    ts_number = int(match.group(1))

    python_loop = _python_sdk_loop if importlib.util.find_spec("rollout") is not None else _httpx_loop
    py_number = python_loop(live_server, f"paper-py-{suffix}", tmp_path)

    with live_server.client() as http:
        ts_shape, py_shape = _run_shape(http, ts_number), _run_shape(http, py_number)
    assert ts_shape["by_status"] == {"succeeded": 2, "failed": 1}
    assert [a["task_key"] for a in ts_shape["attempts"]] == ["page-1", "page-2", "page-9"]
    assert ts_shape == py_shape, f"python loop: {python_loop.__name__}"


# -- the browser build ---------------------------------------------------------------------------------------


class _StaticHandler(SimpleHTTPRequestHandler):
    """sdk-typescript/ as static files (dist/ and test/browser/), plus /config.json naming the live server."""

    config: bytes = b"{}"
    extensions_map = {**SimpleHTTPRequestHandler.extensions_map, ".js": "text/javascript", ".mjs": "text/javascript"}

    def do_GET(self) -> None:
        if self.path == "/config.json":
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(self.config)))
            self.end_headers()
            self.wfile.write(self.config)
            return
        super().do_GET()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.mark.browser
def test_typescript_sdk_in_a_browser(built_sdk: Path, live_server: Live, tmp_path: Path) -> None:
    """dist/ loaded as ES modules in headless Chromium: uploads, the loop, Blobs from materializeFiles, spans."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        reason = "the browser test needs chromium on PATH"
        if require_all():
            pytest.fail(f"required test dependency unavailable: {reason}")
        pytest.skip(reason)
    config = json.dumps({"baseUrl": live_server.base_url, "apiKey": live_server.api_key}).encode()
    handler = type("StaticHandler", (_StaticHandler,), {"config": config})
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(handler, directory=str(built_sdk)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    page = f"http://127.0.0.1:{server.server_address[1]}/test/browser/index.html"
    try:
        # The API sends no CORS headers yet, so the page (another origin) needs --disable-web-security.
        result = subprocess.run(
            [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-web-security",
             "--no-first-run", f"--user-data-dir={tmp_path / 'chromium'}", "--virtual-time-budget=30000",
             "--dump-dom", page],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
    finally:
        server.shutdown()
        server.server_close()
    found = re.search(r'<pre id="result">(.*?)</pre>', result.stdout, re.DOTALL)
    text = found.group(1) if found else f"(no result in the page)\n{result.stdout[-5_000:]}\n{result.stderr[-5_000:]}"
    assert text.startswith("PASS"), text
