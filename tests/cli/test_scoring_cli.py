"""`rollout scorers`, `score`, `advantages`, `discard` and `metrics`, run as the installed executable against a
live server."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import rollout
from tests.cli.helpers import Cli
from tests.sdk.helpers import make_client, unique

pytestmark = pytest.mark.live


@pytest.fixture
def cli(live_server: Any, tmp_path: Path) -> Cli:
    return Cli(live_server, tmp_path)


@pytest.fixture
def client(live_server: Any, tmp_path: Path) -> Iterator[rollout.Client]:
    made = make_client(live_server, tmp_path)
    yield made
    made.close()


ANSWERS = {("capital", 0): "Paris", ("capital", 1): "Lyon", ("sum", 0): "4", ("sum", 1): "4"}


def scored_run(client: rollout.Client) -> tuple[str, rollout.Run, dict[tuple[str, int], str]]:
    """A dataset of two tasks run twice each: capital answered right then wrong, sum right twice."""
    name = unique("cli-score")
    client.create_dataset(
        name,
        [
            {"key": "capital", "instruction": "Capital of France?", "expected_output": "Paris"},
            {"key": "sum", "instruction": "2+2?", "expected_output": "4"},
        ],
    )
    run = client.start_run(name, num_repeats=2, workflow_name=name)
    ids: dict[tuple[str, int], str] = {}
    for item in run.tasks:
        attempt = run.start_rollout(item)
        answer = ANSWERS[(item.task.key, item.repeat_index)]
        attempt.message(answer, role="assistant")
        attempt.finish(output=answer, wait=True)
        ids[(item.task.key, item.repeat_index)] = attempt.id
    return name, run, ids


def table_rows(text: str) -> dict[str, list[str]]:
    """The metrics table's rows by name (`reward (reward)` is keyed `reward`)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split() == ["name", "count", "mean", "std", "min", "max"])
    rows = {}
    for line in lines[start + 1 :]:
        cells = line.split()
        if len(cells) < 6:
            break
        rows[cells[0]] = cells[-5:]
    return rows


def test_scorers_add_list_rm_and_types(cli: Cli, client: rollout.Client) -> None:
    dataset, run, _ = scored_run(client)
    types = cli.json("scorers", "types")
    assert {"type": "exact_match", "source": "builtin"} in types
    assert "llm_judge" in cli("scorers", "types").stdout

    on_dataset = cli.json("scorers", "add", "--dataset", dataset, "correct", "exact_match", "--set", "normalize=true")
    assert on_dataset["type"] == "exact_match" and on_dataset["config"] == {"normalize": True}
    assert on_dataset["dataset_id"] and on_dataset["run_id"] is None and on_dataset["enabled"] is True
    added = cli(
        "scorers",
        "add",
        "--run",
        str(run.number),
        "mentions",
        "contains",
        "--config",
        '{"value": "Paris", "mode": "any"}',
        "--set",
        "case_sensitive=true",
        "--set",
        "score_name=hit",
        "--disabled",
    ).stdout
    assert f"Added scorer mentions (contains) on run {run.number} (disabled): scorer_" in added
    replaced = cli("scorers", "add", "--run", run.id, "mentions", "contains", "--set", "value=Lyon").stdout
    assert "Replaced scorer mentions" in replaced

    on_run = {s["name"]: s for s in cli.json("scorers", "list", "--run", str(run.number))}
    assert set(on_run) == {"correct", "mentions"}  # its own and its dataset's
    assert on_run["mentions"]["config"] == {"value": "Lyon"} and on_run["mentions"]["enabled"] is True
    assert [s["name"] for s in cli.json("scorers", "list", "--dataset", dataset)] == ["correct"]
    listed = cli("scorers", "list", "--run", str(run.number)).stdout
    assert on_run["correct"]["id"] in listed and "exact_match" in listed

    assert cli.json("scorers", "rm", on_run["mentions"]["id"]) == {"removed": on_run["mentions"]["id"]}
    assert [s["name"] for s in cli.json("scorers", "list", "--run", str(run.number))] == ["correct"]
    cli("scorers", "rm", on_run["mentions"]["id"], expect=4)

    cli("scorers", "add", "correct", "exact_match", expect=2)  # no target
    cli("scorers", "add", "--dataset", dataset, "--run", run.id, "x", "exact_match", expect=2)
    cli("scorers", "add", "--run", run.id, "x", "exact_match", "--config", "{not json", expect=2)
    cli("scorers", "add", "--run", run.id, "x", "exact_match", "--set", "novalue", expect=2)
    bad = cli("scorers", "add", "--run", run.id, "x", "no_such_type", expect=6)
    assert "unknown scorer type" in bad.stderr
    cli("scorers", "add", "--dataset", unique("missing"), "x", "exact_match", expect=4)


def test_score_advantages_discard_and_metrics(cli: Cli, client: rollout.Client) -> None:
    dataset, run, ids = scored_run(client)
    number = str(run.number)
    # Configured after the rollouts finished: nothing scored them yet.
    cli("scorers", "add", "--dataset", dataset, "reward", "exact_match")
    assert cli.json("metrics", number)["scores"] == {}

    scored = cli.json("score", number, "--interval", "0.2")
    assert scored["enqueued"] == 4 and scored["scoring"]["queued"] == scored["scoring"]["running"] == 0
    reward = scored["metrics"]["scores"]["reward"]
    assert (reward["count"], reward["mean"], reward["min"], reward["max"]) == (4, 0.75, 0.0, 1.0)
    assert scored["metrics"]["reward"]["mean"] == 0.75  # the run's reward score set each rollout's reward

    text = cli("score", number, "--inline", 'short:length:{"max": 3}', "--interval", "0.2").stdout
    assert "Scored 4 rollout(s)" in text and "Scorer errors" not in text
    rows = table_rows(text)
    assert rows["reward"] == ["4", "0.7500", "0.4330", "0.0000", "1.0000"]
    assert rows["short"] == ["4", "0.5000", "0.5000", "0.0000", "1.0000"]  # "4" twice is at most 3 characters
    refused = cli("score", number, "--scorer", "nonexistent", expect=6)
    assert "no enabled scorer named 'nonexistent'" in refused.stderr

    advantages = cli.json("advantages", number)
    assert (advantages["rollouts"], advantages["scored"], advantages["groups"]) == (4, 4, 2)
    assert advantages["discarded_zero_variance"] == 2 and advantages["normalization"] == "grpo"
    text = cli("advantages", number, "--normalization", "dr_grpo").stdout
    assert "Advantages (dr_grpo)" in text and "2 group(s); discarded: 2 zero variance" in text
    assert table_rows(text)["advantage"] == ["4", "0.0000", "0.3536", "-0.5000", "0.5000"]
    cli("advantages", number, "--normalization", "bogus", expect=2)

    metrics = cli.json("metrics", number)
    assert metrics["discarded_count"] == 2 and metrics["rollout_count"] == 4
    kept = cli.json("metrics", number, "--exclude-discarded")
    assert kept["rollout_count"] == 2 and kept["reward"]["mean"] == 0.5

    wrong = ids[("capital", 1)]
    wrong_attempt = client.get_rollout(wrong, events=False).attempt
    marked = cli.json("discard", f"{number}/{wrong_attempt}", "--reason", "reward hacking")
    assert marked == {"id": wrong, "discarded": True, "discard_reason": "reward hacking"}
    assert cli.json("metrics", number)["discarded_count"] == 3
    assert "is no longer discarded" in cli("discard", wrong, "--undo").stdout
    assert client.get_rollout(wrong, events=False).discarded is False
    cli("discard", "ro_doesnotexist", expect=4)
    cli("metrics", "987654", expect=4)

    queued = cli.json("score", number, "--no-wait")
    assert queued["enqueued"] == 4 and queued["total"] >= 12
    assert "Run " + number in cli("metrics", number).stdout


def test_score_points_to_the_errors_of_failed_scorers(live_server_factory: Callable[..., Any], tmp_path: Path) -> None:
    live = live_server_factory(ROLLOUT_SCORING_RETRY_SECONDS="0.1")
    cli = Cli(live, tmp_path)
    client = make_client(live, tmp_path)
    run = client.start_run(workflow_name=unique("cli-score-errors"))
    for answer in ("yes", "no"):
        attempt = run.start_rollout(input={"q": "?"})
        attempt.finish(output=answer, wait=True)
    # Ad-hoc rollouts have no task, so no expected output: exact_match fails on each, three times.
    failed = cli("score", str(run.number), "--inline", "judge:exact_match", "--interval", "0.2", expect=1)
    assert "Scorer errors: judge 2" in failed.stdout and f"rollout score errors {run.number}" in failed.stdout
    as_json = json.loads(
        cli("score", str(run.number), "--inline", "judge:exact_match", "--interval", "0.2", "--json", expect=1).stdout
    )
    assert as_json["metrics"]["errors"] == {"judge": 2} and as_json["scoring"]["errors"] == 2

    errors = cli.json("score", "errors", str(run.number))
    assert len(errors) == 2 and {e["scorer"] for e in errors} == {"judge"}
    assert all("expected_output" in e["message"] and e["detail"] == "attempt 3 of 3; final" for e in errors)
    listed = cli("score", "errors", str(run.number)).stdout
    assert "judge" in listed and "expected_output" in listed
    cli("score", "errors", expect=2)
    cli("score", str(run.number), "extra", expect=2)
    cli("score", str(run.number), "--inline", "nocolon", expect=2)
    client.close()
