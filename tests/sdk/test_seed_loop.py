"""Done-means 1: the seed loop from DESIGN.md runs unchanged against a live server."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rollout
from tests.sdk.helpers import raw, run_rollouts

pytestmark = pytest.mark.live

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "seed_loop.py"


def load_example() -> Any:
    spec = importlib.util.spec_from_file_location("seed_loop_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def default_client(live_server: Any, tmp_path: Path) -> Iterator[rollout.Client]:
    client = rollout.configure(
        base_url=live_server.base_url,
        api_key=live_server.api_key,
        spool_dir=tmp_path / "spool",
        files_cache_dir=tmp_path / "cache",
    )
    yield client
    rollout.shutdown()


def answer_task(instruction: str, input: dict[str, Any] | None, files: list[Path]) -> dict[str, Any]:
    """Reads the task's PDF; gives up on long papers, so one attempt fails."""
    text = files[0].read_bytes().decode()
    assert input is not None
    if input["pages"] > 30:
        raise ValueError(f"{input['pages']} pages is too long to summarise")
    return {"summary": text.splitlines()[1], "pages": input["pages"]}


def pages(item: rollout.RunTask) -> int:
    return int((item.task.input or {})["pages"])


def test_seed_loop_verbatim(default_client: rollout.Client, live_server: Any) -> None:
    load_example().ensure_dataset()
    seen_files: dict[str, list[Path]] = {}

    with pytest.raises(ValueError, match="too long"):
        # ---- the loop from DESIGN.md, as written ----
        run = rollout.start_run("paper-summary-v1", workflow_name="Paper QA", group_id="thread-42")
        for task in run.tasks:
            attempt = run.start_rollout(task)
            files = attempt.materialize_files()
            seen_files[task.task.key] = files
            try:
                attempt.message("Starting task", role="system")
                result = answer_task(task.task.instruction, task.task.input, files)
                attempt.finish(output=result)
            except Exception as error:
                attempt.error(str(error))
                attempt.finish(status="failed", error=str(error))
                raise
        # ---- end of the loop ----

    assert rollout.flush(timeout=30)
    assert run.number >= 1 and run.id.startswith("run_") and run.url.startswith("http")
    failing = next(i for i, item in enumerate(run.tasks) if pages(item) > 30)
    with raw(live_server) as http:
        stored = sorted(run_rollouts(http, run.id), key=lambda r: r["attempt"])
        # One rollout per task attempted: the loop stops at the failure (it re-raises).
        assert len(stored) == failing + 1
        assert [r["task_id"] for r in stored] == [item.task.id for item in run.tasks[: failing + 1]]
        for item, row in zip(run.tasks, stored, strict=False):
            detail = http.get(f"/rollouts/{row['id']}").json()
            kinds = [(e["kind"], e.get("role"), e.get("content") or e.get("message")) for e in detail["events"]]
            if pages(item) > 30:
                assert detail["status"] == "failed"
                assert detail["error"] == "40 pages is too long to summarise"
                assert kinds == [
                    ("message", "system", "Starting task"),
                    ("error", None, "40 pages is too long to summarise"),
                ]
            else:
                assert detail["status"] == "succeeded"
                assert detail["output"]["pages"] == pages(item)
                assert kinds == [("message", "system", "Starting task")]
            assert [e["seq"] for e in detail["events"]] == sorted(e["seq"] for e in detail["events"])

    # Files were materialised: real bytes, SHA-256-named cache folders, original names.
    for key, paths in seen_files.items():
        assert len(paths) == 1 and paths[0].name == f"{key}.pdf"
        assert paths[0].read_bytes().startswith(b"%PDF-1.4")
        assert len(paths[0].parent.name) == 64


def test_example_script_runs(live_server: Any, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "ROLLOUT_BASE_URL": live_server.base_url,
        "ROLLOUT_API_KEY": live_server.api_key,
        "ROLLOUT_SPOOL_DIR": str(tmp_path / "spool"),
        "ROLLOUT_FILES_CACHE_DIR": str(tmp_path / "cache"),
        "ROLLOUT_CONFIG_FILE": str(tmp_path / "no-login.json"),
    }
    done = subprocess.run([sys.executable, str(EXAMPLE)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    number = int(done.stdout.split()[1].rstrip(":"))
    with raw(live_server) as http:
        run = http.get(f"/runs/{number}").json()
        assert run["workflow_name"] == "Paper QA" and run["group_id"] == "thread-42"
        assert run["aggregates"]["by_status"] == {"succeeded": 3}
