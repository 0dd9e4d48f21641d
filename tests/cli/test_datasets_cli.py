"""`rollout datasets push/pull/diff/promote`, `rollout runs start` and `rollout files add-from-bucket`,
run as the installed executable against a live server."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.cli.helpers import Cli
from tests.sdk.helpers import make_client, unique

pytestmark = pytest.mark.live


@pytest.fixture
def cli(live_server: Any, tmp_path: Path) -> Cli:
    return Cli(live_server, tmp_path)


def write_folder(folder: Path, tasks: list[dict[str, Any]], files: dict[str, bytes]) -> Path:
    (folder / "files").mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (folder / "files" / name).write_bytes(data)
    (folder / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
    return folder


def test_push_folder_pull_and_diff(cli: Cli, tmp_path: Path) -> None:
    pdf = bytes(range(256)) * 40 + b"%PDF the paper"
    tasks: list[dict[str, Any]] = [
        {"key": "a", "instruction": "Summarise", "input": {"n": 1}, "files": ["files/paper.pdf"], "split": "test"},
        {"key": "b", "instruction": "Explain", "expected_output": 2},
    ]
    src = write_folder(tmp_path / "src", tasks, {"paper.pdf": pdf})
    name = unique("cli-push")
    pushed = cli.json("datasets", "push", str(src), "--dataset", name, "--format", "jsonl", "-m", "first")
    assert pushed["created_dataset"] and pushed["version"] == 1 and pushed["tasks"] == 2 and pushed["files"] == 1

    archive = tmp_path / "out.zip"
    pulled = cli.json("datasets", "pull", name, "--format", "jsonl", "-o", str(archive))
    assert pulled["path"] == str(archive) and pulled["bytes"] == archive.stat().st_size
    with zipfile.ZipFile(archive) as z:
        lines = {t["key"]: t for t in map(json.loads, z.read("tasks.jsonl").decode().splitlines())}
        assert lines["a"]["instruction"] == "Summarise" and lines["b"]["expected_output"] == 2
        assert z.read(lines["a"]["files"][0]["path"]) == pdf  # the file's bytes survive the round trip
    assert "Nothing changed" in cli("datasets", "push", str(archive), "--dataset", name).stdout

    # A second push: change a, drop b, add c; then diff shows it (default: latest against the one before).
    tasks = [{**tasks[0], "instruction": "Summarise briefly"}, {"key": "c", "instruction": "New"}]
    write_folder(src, tasks, {})
    text = cli("datasets", "push", str(src), "--dataset", name, "-m", "second").stdout
    assert f"Pushed {name} v2: 1 added, 1 updated, 1 removed" in text
    diff = cli.json("datasets", "diff", name)
    assert (diff["from_version"], diff["to_version"]) == (1, 2)
    changes = {i["key"]: (i["change"], i["fields"]) for i in diff["items"]}
    assert changes == {"a": ("changed", ["instruction"]), "b": ("removed", []), "c": ("added", [])}
    table = cli("datasets", "diff", name, "--from", "0", "--to", "2").stdout
    assert "v0 → v2: 2 added" in table and "Summarise briefly" in table

    # --merge keeps the tasks the import does not hold; a plain .jsonl goes as-is.
    extra = tmp_path / "extra.jsonl"
    extra.write_text(json.dumps({"key": "d", "instruction": "Merged"}) + "\n")
    merged = cli.json("datasets", "push", str(extra), "--dataset", name, "--merge")
    assert (merged["version"], merged["tasks"], merged["removed"]) == (3, 3, 0)
    nemo = tmp_path / "v1.jsonl"
    cli("datasets", "pull", name, "--version", "1", "--format", "nemo-gym", "-o", str(nemo))
    assert len(nemo.read_text().splitlines()) == 2

    cli("datasets", "pull", unique("missing"), "--format", "jsonl", "-o", str(tmp_path / "x.zip"), expect=4)
    assert not (tmp_path / "x.zip").exists()
    cli("datasets", "diff", unique("missing"), expect=4)
    bad = cli("datasets", "push", str(src), "--dataset", name, "--format", "bogus", expect=2)
    assert "unknown format" in bad.stderr
    cli("datasets", "push", str(src), expect=2)  # neither NAME FILE nor --dataset
    refused = cli("datasets", "push", str(tmp_path / "extra.jsonl"), "--dataset", "ds_doesnotexist", expect=4)
    assert "error:" in refused.stderr and "Traceback" not in refused.stderr


def test_promote_failures_and_rerun(cli: Cli, live_server: Any, tmp_path: Path) -> None:
    client = make_client(live_server, tmp_path)
    source = unique("cli-src")
    client.create_dataset(
        source, [{"key": k, "instruction": f"Do {k}", "expected_output": k} for k in ("t1", "t2", "t3")]
    )
    run = client.start_run(source, workflow_name=unique("cli-promote"))
    by_key = {item.task.key: item for item in run.tasks}
    outcomes = {"t1": ("succeeded", 1.0), "t2": ("failed", 0.0), "t3": ("succeeded", 0.2)}
    attempts = {}
    for key, (status, reward) in outcomes.items():
        attempt = run.start_rollout(by_key[key])
        attempt.score("reward", reward)
        if status == "failed":
            attempt.finish(status="failed", error="wrong answer", output="bad", wait=True)
        else:
            attempt.finish(output=f"answer {key}", wait=True)
        attempts[key] = attempt
    run.finish()

    regression = unique("cli-regress")
    one = cli.json(
        "datasets", "promote", "--rollout", attempts["t2"].id, "--dataset", regression, "-m", "from a failure"
    )
    assert one["created_dataset"] and one["keys"] == ["t2"] and one["version"] == 1
    again = cli(
        "datasets",
        "promote",
        "--rollout",
        attempts["t1"].id,
        "--dataset",
        regression,
        "--key",
        "t1-golden",
        "--output-as-expected",
    ).stdout
    assert f"Updated {regression} v2: 1 added" in again
    tasks = {t.key: t for t in client.get_dataset(regression).tasks()}
    assert tasks["t1-golden"].expected_output == "answer t1" and tasks["t2"].instruction == "Do t2"

    by_run = cli.json(
        "datasets",
        "promote",
        "--run",
        str(run.number),
        "--dataset",
        unique("cli-regress-run"),
        "--status",
        "failed",
        "--reward-below",
        "0.5",
    )
    assert sorted(by_run["keys"]) == ["t2", "t3"]
    cli("datasets", "promote", "--dataset", regression, expect=2)
    cli("datasets", "promote", "--rollout", "ro_x", "--run", "1", "--dataset", regression, expect=2)
    cli("datasets", "promote", "--rollout", "ro_doesnotexist", "--dataset", regression, expect=4)

    # Re-run the regression dataset, then only what failed (or scored low) in the source run.
    started = cli.json("runs", "start", regression, "--workflow-name", "regress", "--repeats", "2")
    assert started["dataset_version"] == 2 and started["num_repeats"] == 2
    shown = client.get_run(started["number"])
    assert sorted({item.task.key for item in shown.tasks}) == ["t1-golden", "t2"] and len(shown.tasks) == 4
    text = cli("runs", "start", "--only-failed-from", str(run.number)).stdout
    number = int(text.split("Started run ")[1].split()[0])
    assert f"/runs/{number}" in text or client.get_run(number).url in text
    rerun = client.get_run(number)
    assert [item.task.key for item in rerun.tasks] == ["t2"] and rerun.info.rerun_of
    low = cli.json("runs", "start", "--only-failed-from", run.id, "--reward-below", "0.5")
    assert sorted(item.task.key for item in client.get_run(low["number"]).tasks) == ["t2", "t3"]
    assert low["rerun_reward_below"] == 0.5
    cli("runs", "start", expect=2)
    cli("runs", "start", unique("missing"), expect=4)
    client.close()


def test_add_from_bucket_without_a_bucket(cli: Cli) -> None:
    done = cli("files", "add-from-bucket", "papers/attention.pdf", "--import", expect=6)
    assert "no connected bucket" in done.stderr and "Settings" in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""
