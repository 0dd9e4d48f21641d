"""Done-means 6: every `rollout` command, run as the installed executable against a live server."""

from __future__ import annotations

import json
import stat
import subprocess
import time
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

import rollout
from tests.cli.helpers import Cli, executable
from tests.sdk.helpers import make_client, unique

pytestmark = pytest.mark.live


@pytest.fixture
def cli(live_server: Any, tmp_path: Path) -> Cli:
    return Cli(live_server, tmp_path)


def test_login_whoami_logout(cli: Cli, live_server: Any) -> None:
    cli("whoami", auth=False, expect=3)
    cli("login", "--url", live_server.base_url, "--key", "rk_not_a_real_key", auth=False, expect=3)
    assert not cli.config.exists()
    done = cli("login", "--url", live_server.base_url, auth=False, stdin=live_server.api_key + "\n")
    assert "Logged in to workspace" in done.stdout
    assert stat.S_IMODE(cli.config.stat().st_mode) == 0o600
    saved = json.loads(cli.config.read_text())
    assert saved["base_url"] == live_server.base_url and saved["api_key"] == live_server.api_key
    who = json.loads(cli("whoami", "--json", auth=False).stdout)
    assert who["workspace"]["name"] and who["credentials_from"] == str(cli.config)
    assert "workspace" in cli("whoami", auth=False).stdout
    cli("logout", auth=False)
    assert "api_key" not in json.loads(cli.config.read_text())
    cli("whoami", auth=False, expect=3)


def test_keys_create_list_revoke(cli: Cli) -> None:
    name = unique("cli-key")
    created = cli.json("keys", "create", name)
    assert created["secret"].startswith("rk_") and created["name"] == name
    assert any(k["id"] == created["id"] for k in cli.json("keys", "list"))
    assert created["id"] in cli("keys", "list").stdout
    plain = cli("keys", "create", unique("shown"))
    assert "shown only now" in plain.stdout and "rk_" in plain.stdout
    revoked = cli.json("keys", "revoke", created["id"])
    assert revoked["revoked_at"] is not None
    cli("keys", "revoke", "key_doesnotexist", expect=4)


def write_tasks(folder: Path, tasks: list[dict[str, Any]]) -> Path:
    path = folder / "tasks.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    return path


def test_datasets_create_show_push_pull(cli: Cli, tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "files").mkdir(parents=True)
    (src / "files" / "paper.pdf").write_bytes(b"%PDF paper v1")
    (src / "files" / "notes.txt").write_text("notes")
    tasks: list[dict[str, Any]] = [
        {"key": "a", "instruction": "Summarise", "input": {"n": 1}, "files": ["files/paper.pdf"], "split": "test"},
        {"key": "b", "instruction": "Explain", "files": ["files/paper.pdf", "files/notes.txt"]},
        {"key": "c", "instruction": "Third", "expected_output": 3},
    ]
    name = unique("cli-ds")
    created = cli.json("datasets", "create", name, "--from", str(write_tasks(src, tasks)), "--description", "d")
    assert created["task_count"] == 3 and created["latest_version"] == 1
    assert name in cli("datasets", "list").stdout
    assert any(d["name"] == name for d in cli.json("datasets", "list"))
    shown = cli.json("datasets", "show", name)
    assert {t["key"] for t in shown["tasks"]} == {"a", "b", "c"} and len(shown["versions"]) == 1
    assert "Summarise" in cli("datasets", "show", name).stdout

    # Push: change a, drop b, add d, change a file's bytes.
    (src / "files" / "paper.pdf").write_bytes(b"%PDF paper v2")
    tasks = [{**tasks[0], "instruction": "Summarise briefly"}, tasks[2], {"key": "d", "instruction": "New"}]
    path = write_tasks(src, tasks)
    dry = cli.json("datasets", "push", name, str(path), "--dry-run")
    assert (dry["added"], dry["updated"], dry["removed"], dry["dry_run"]) == (1, 1, 1, True)
    pushed = cli.json("datasets", "push", name, str(path), "-m", "second")
    assert (pushed["added"], pushed["updated"], pushed["removed"], pushed["version"]) == (1, 1, 1, 2)
    assert "Nothing to push" in cli("datasets", "push", name, str(path)).stdout

    out = tmp_path / "pulled"
    pulled = cli.json("datasets", "pull", name, "-o", str(out))
    assert pulled["tasks"] == 3 and pulled["files"] == 1
    lines = [json.loads(line) for line in (out / "tasks.jsonl").read_text().splitlines()]
    by_key = {t["key"]: t for t in lines}
    assert by_key["a"]["instruction"] == "Summarise briefly" and by_key["a"]["files"] == ["files/paper.pdf"]
    assert (out / "files" / "paper.pdf").read_bytes() == b"%PDF paper v2"
    assert by_key["c"]["expected_output"] == 3
    # Round trip: pushing what was pulled changes nothing.
    assert json.loads(cli("datasets", "push", name, str(out / "tasks.jsonl"), "--json").stdout)["updated"] == 0
    old = tmp_path / "old"
    cli("datasets", "pull", name, "--version", "1", "-o", str(old))
    assert (old / "files" / "paper.pdf").read_bytes() == b"%PDF paper v1"
    assert len((old / "tasks.jsonl").read_text().splitlines()) == 3

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"key": "x", "instruction": "ok"}\nnot json\n')
    done = cli("datasets", "push", name, str(bad), expect=1)
    assert "bad.jsonl:2" in done.stderr
    cli("datasets", "show", unique("missing"), expect=4)


def make_run(live: Any, tmp_path: Path) -> tuple[rollout.Client, rollout.Run, list[rollout.Attempt]]:
    client = make_client(live, tmp_path)
    run = client.start_run(workflow_name=unique("cli-run"), agent="cli-agent", tags=["cli"])
    attempts = []
    for n in range(2):
        attempt = run.start_rollout(input={"n": n})
        attempt.message("Starting task", role="system")
        with attempt.span("search"):
            attempt.tool_call("web_search", {"q": "rollout"}).result(["result one"])
        attempt.llm_call(
            "gpt-4o",
            input=[{"role": "user", "content": "hi"}],
            output={"role": "assistant", "content": "hello"},
            usage={"input_tokens": 10, "output_tokens": 2},
        )
        attempt.score("reward", float(n))
        attempts.append(attempt)
    attempts[0].finish(output="answer zero", wait=True)
    attempts[1].error("it broke")
    attempts[1].finish(status="failed", error="it broke", wait=True)
    return client, run, attempts


def test_runs_and_rollouts(cli: Cli, live_server: Any, tmp_path: Path) -> None:
    client, run, attempts = make_run(live_server, tmp_path)
    listed = cli.json("runs", "list", "--workflow", run.workflow_name)
    assert [r["number"] for r in listed] == [run.number]
    assert str(run.number) in cli("runs", "list", "--tag", "cli").stdout
    shown = cli.json("runs", "show", str(run.number))
    assert shown["run"]["aggregates"]["by_status"] == {"succeeded": 1, "failed": 1}
    assert len(shown["rollouts"]) == 2
    text = cli("runs", "show", str(run.number)).stdout
    assert "cli-agent" in text and f"{run.number}/1" in text

    assert len(cli.json("rollouts", "list", "--run", str(run.number))) == 2
    assert len(cli.json("rollouts", "list", "--run", run.id, "--status", "failed")) == 1
    trace = cli("rollouts", "show", f"{run.number}/{attempts[0].attempt}").stdout
    for piece in (
        "succeeded",
        "system: Starting task",
        "web_search(",
        "result one",
        "gpt-4o",
        "10→2 tok",
        "answer zero",
        "reward",
    ):
        assert piece in trace, piece
    failed = cli("rollouts", "show", attempts[1].id).stdout
    assert "failed" in failed and "it broke" in failed
    detail = cli.json("rollouts", "show", attempts[1].id)
    assert detail["status"] == "failed" and len(detail["events"]) == 6
    cli("rollouts", "show", "ro_doesnotexist", expect=4)
    cli("runs", "show", "987654", expect=4)
    client.close()


def test_delete_a_rollout_and_a_run(cli: Cli, live_server: Any, tmp_path: Path) -> None:
    client, run, attempts = make_run(live_server, tmp_path)
    handle = f"{run.number}/{attempts[1].attempt}"
    kept = cli("rollouts", "delete", handle, stdin="n\n", expect=1)  # answered no: nothing happens
    assert "Nothing deleted" in kept.stderr
    assert f"Deleted rollout {handle}" in cli("rollouts", "delete", handle, stdin="y\n").stdout
    assert [r["id"] for r in cli.json("rollouts", "list", "--run", run.id)] == [attempts[0].id]
    assert f"Deleted run {run.number} and its 1 rollout(s)" in cli("runs", "delete", str(run.number), "--yes").stdout
    cli("runs", "show", str(run.number), expect=4)
    client.close()


def test_export_and_import(cli: Cli, live_server: Any, tmp_path: Path) -> None:
    client, run, attempts = make_run(live_server, tmp_path)
    target = tmp_path / "export.jsonl"
    done = cli("export", "rollout", "--run", str(run.number), "-o", str(target))
    assert "Exported 2 line(s)" in done.stderr
    rows = [json.loads(line) for line in target.read_text().splitlines()]
    assert sorted(r["status"] for r in rows) == ["failed", "succeeded"]
    assert sorted(len(r["events"]) for r in rows) == [5, 6]
    only_good = cli("export", "openai-sft", "--run", run.id, "--status", "succeeded").stdout.splitlines()
    assert len(only_good) == 1 and json.loads(only_good[0])["messages"]
    assert [r["ref"]["id"] for r in client.export("rollout", run=run.number, status=["failed"])] == [attempts[1].id]
    imported = cli.json("import", str(target), "--workflow", unique("imported"))
    assert imported["rollouts"] == 2 and imported["events"] == 11 and imported["scores"] == 2
    copy = cli.json("runs", "show", str(imported["run"]["number"]))
    assert copy["run"]["aggregates"]["by_status"] == {"succeeded": 1, "failed": 1}
    assert imported["metrics"]["scores"]["reward"]["count"] == 2
    # As text, the import ends with the run's metrics table, as NeMo Gym prints after a collection.
    text = cli("import", str(target), "--workflow", unique("imported-text")).stdout
    assert "Imported 2 rollout(s)" in text
    header, reward = next(
        (line.split(), next_line.split())
        for line, next_line in pairwise(text.splitlines())
        if line.split()[:1] == ["name"]
    )
    assert header == ["name", "count", "mean", "std", "min", "max"]
    assert reward == ["reward", "(reward)", "2", "0.5000", "0.5000", "0.0000", "1.0000"]
    cli("export", "bogus", expect=2)
    client.close()


def test_tail_follows_a_live_run(cli: Cli, live_server: Any, tmp_path: Path) -> None:
    client = make_client(live_server, tmp_path, flush_interval=0.05)
    run = client.start_run(workflow_name=unique("cli-tail"))
    first = run.start_rollout(input={"n": 0})
    env = {**cli.env, "ROLLOUT_BASE_URL": live_server.base_url, "ROLLOUT_API_KEY": live_server.api_key}
    tail = subprocess.Popen(
        [executable(), "tail", str(run.number), "--interval", "0.2", "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(1.5)
        first.finish(output="done", wait=True)
        second = run.start_rollout(input={"n": 1})
        second.finish(status="failed", error="nope", wait=True)
        time.sleep(1.0)
        run.finish()
        out, err = tail.communicate(timeout=30)
    finally:
        if tail.poll() is None:
            tail.kill()
    assert tail.returncode == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    seen = [(line["attempt"], line["status"]) for line in lines if line["event"] == "rollout"]
    assert seen[0] == (first.attempt, "running")
    assert (first.attempt, "succeeded") in seen and (second.attempt, "failed") in seen
    assert lines[-1]["event"] == "run" and lines[-1]["status"] == "finished"
    # On a finished run, tail prints what happened and exits at once.
    done = cli("tail", str(run.number))
    assert "succeeded" in done.stdout and "failed" in done.stdout
    client.close()


def test_exit_codes_and_messages(cli: Cli) -> None:
    unreachable = cli("--base-url", "http://127.0.0.1:9", "runs", "list", expect=5)
    assert "could not reach" in unreachable.stderr and "Traceback" not in unreachable.stderr
    wrong_key = cli("--api-key", "rk_wrong", "runs", "list", expect=3)
    assert "rollout login" in wrong_key.stderr
    cli("runs", "frobnicate", expect=2)
    assert cli("--version").stdout.startswith("rollout ")
