"""The SDK's surface against a live server: datasets and files, the trace methods, runs, reads, errors."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rollout
from rollout._http import SyncTransport
from tests.sdk.helpers import all_events, make_client, raw, unique

pytestmark = pytest.mark.live


@pytest.fixture
def client(live_server: Any, tmp_path: Path) -> Iterator[rollout.Client]:
    made = make_client(live_server, tmp_path)
    yield made
    made.close()


def test_datasets_versions_and_files(client: rollout.Client, tmp_path: Path) -> None:
    pdf = tmp_path / "paper.pdf"
    pdf.write_bytes(b"%PDF-1.4 forty pages")
    name = unique("ds")
    dataset = client.create_dataset(
        name,
        [
            {
                "key": "a",
                "instruction": "Summarise",
                "input": {"x": 1},
                "files": [pdf],
                "split": "train",
                "expected_output": "short",
                "output_schema": {"type": "string"},
                "metadata": {"source": "test"},
            },
            {
                "key": "b",
                "instruction": "Same bytes, other task",
                "files": [b"%PDF-1.4 forty pages", ("notes.txt", b"hi")],
            },
        ],
        description="test data",
        message="first",
    )
    assert dataset.latest_version == 1 and dataset.task_count == 2
    first = {t.key: t for t in dataset.tasks()}
    assert first["a"].files[0].name == "paper.pdf" and first["a"].files[0].media_type == "application/pdf"
    assert first["a"].files[0].sha256 == first["b"].files[0].sha256  # uploaded once, shared
    assert [f.name for f in first["b"].files][1] == "notes.txt"

    version = dataset.add_tasks([{"key": "c", "instruction": "New"}], message="more")
    assert version.number == 2 and version.added == 1 and dataset.task_count == 3
    dataset.update_tasks([{"key": "a", "instruction": "Summarise briefly", "split": None}])
    dataset.remove_tasks(["b"])
    assert client.get_dataset(name).latest_version == 4
    updated = dataset.task("a")
    assert updated.split is None and updated.input == {"x": 1}  # None clears; left out is kept
    assert [f.name for f in updated.files] == ["paper.pdf"]
    assert {t.key for t in dataset.tasks(version=1)} == {"a", "b"}
    assert {t.key: t.instruction for t in dataset.tasks()} == {"a": "Summarise briefly", "c": "New"}
    assert [v.number for v in dataset.versions()] == [4, 3, 2, 1] or [v.number for v in dataset.versions()] == [
        1,
        2,
        3,
        4,
    ]
    assert client.get_dataset(dataset.id).name == name
    assert name in {d.name for d in client.list_datasets()}


def test_materialize_files_is_cached_by_sha256(client: rollout.Client, monkeypatch: pytest.MonkeyPatch) -> None:
    payload = b"same bytes " * 1000
    dataset = client.create_dataset(
        unique("files"),
        [
            {"key": "one", "instruction": "x", "files": [("report.pdf", payload)]},
            {"key": "two", "instruction": "y", "files": [("copy.pdf", payload), ("other.txt", b"other")]},
        ],
    )
    run = client.start_run(dataset)
    one, two = sorted(run.tasks, key=lambda item: item.task.key)
    attempt = run.start_rollout(one)
    paths = attempt.materialize_files()
    assert [p.name for p in paths] == ["report.pdf"] and paths[0].read_bytes() == payload

    def no_network(*args: Any, **kwargs: Any) -> int:
        raise AssertionError("downloaded again")

    monkeypatch.setattr(SyncTransport, "stream_to", no_network)
    assert attempt.materialize_files() == paths  # second call: nothing
    again = run.start_rollout(one)
    assert again.materialize_files() == paths  # another attempt: the cache answers
    monkeypatch.undo()
    other = run.start_rollout(two).materialize_files()
    assert other[0].parent == paths[0].parent  # same SHA-256 folder, the task's own file name
    assert other[0].name == "copy.pdf" and other[1].read_bytes() == b"other"
    for item in (attempt, again):
        item.finish()


def test_trace_methods_spans_tools_scores_and_llm_calls(client: rollout.Client, live_server: Any) -> None:
    run = client.start_run(
        workflow_name=unique("trace"),
        agent="tester",
        agent_version="1.2",
        model="gpt-4o",
        params={"temperature": 0},
        tags=["sdk-test"],
    )
    attempt = run.start_rollout(input={"question": "2+2?"}, step=3, group_key="q-1", metadata={"env": "test"})
    assert attempt.url.startswith("http") and attempt.attempt >= 1 and attempt.id.startswith("ro_")
    attempt.message("You are terse.", role="system")
    with attempt.span("plan") as plan:
        attempt.reasoning("Add the numbers.")
        with attempt.span("tools") as inner:
            call = attempt.tool_call("calculator", {"expression": "2+2"})
            time.sleep(0.05)
            call.result(4)
            with attempt.tool_call("search", {"q": "x"}) as failing:
                failing.error("no network")
    attempt.llm_call(
        "gpt-4o-2024-08-06",
        input=[{"role": "user", "content": "2+2?"}],
        output={"role": "assistant", "content": "4"},
        usage={"prompt_tokens": 1000, "completion_tokens": 100},
        latency_ms=120,
    )
    attempt.log("done", level="debug", metadata={"k": 1})
    attempt.score("reward", 1.0, comment="correct")
    attempt.score("verdict", "pass")
    stored = attempt.finish(output="4", wait=True)
    assert stored is not None and stored.status == "succeeded" and stored.output == "4"

    detail = client.get_rollout(attempt.id)
    assert detail.step == 3 and detail.group_key == "q-1" and detail.metadata == {"env": "test"}
    assert detail.reward == 1.0 and {s.name for s in detail.scores} == {"reward", "verdict"}
    assert detail.input_tokens == 1000 and detail.output_tokens == 100
    assert detail.cost == pytest.approx((1000 * 2.5 + 100 * 10) / 1e6)
    events = {e.kind + ":" + (e.name or ""): e for e in detail.events}
    assert [e.seq for e in detail.events] == sorted(e.seq for e in detail.events)
    kinds = [e.kind for e in detail.events]
    assert kinds == [
        "message",
        "span",
        "reasoning",
        "span",
        "tool_call",
        "tool_result",
        "tool_call",
        "tool_result",
        "llm_call",
        "log",
    ]
    assert events["reasoning:"].parent_id == plan.id
    assert events["span:tools"].parent_id == plan.id
    assert events["tool_call:calculator"].parent_id == inner.id
    result = events["tool_result:calculator"]
    assert result.parent_id == inner.id and result.duration_ms is not None and result.duration_ms >= 50
    extra = result.model_extra or {}
    assert extra["call_id"] == call.call_id and extra["output"] == 4 and extra["is_error"] is False
    assert (events["tool_result:search"].model_extra or {})["is_error"] is True
    assert events["llm_call:"].duration_ms == pytest.approx(120, abs=1)
    assert events["span:plan"].duration_ms is not None and events["span:plan"].duration_ms >= 50
    assert client.get_rollout((run.number, attempt.attempt)).id == attempt.id
    assert client.get_rollout(f"{run.number}/{attempt.attempt}").id == attempt.id


def test_context_managers_record_failures(client: rollout.Client, live_server: Any) -> None:
    with pytest.raises(RuntimeError, match="agent crashed"), client.start_run(workflow_name=unique("ctx")) as run:
        with run.start_rollout() as fine:
            fine.message("ok", role="assistant")
        with run.start_rollout() as broken:
            broken.message("about to fail", role="assistant")
            raise RuntimeError("agent crashed")
    assert client.flush(timeout=30)
    with raw(live_server) as http:
        assert http.get(f"/rollouts/{fine.id}").json()["status"] == "succeeded"
        failed = http.get(f"/rollouts/{broken.id}").json()
        assert failed["status"] == "failed" and failed["error"] == "RuntimeError: agent crashed"
        assert [e["kind"] for e in failed["events"]] == ["message", "error"]
        assert failed["events"][1]["type"] == "RuntimeError" and "Traceback" in failed["events"][1]["traceback"]
        assert http.get(f"/runs/{run.id}").json()["status"] == "failed"

    with client.start_run(workflow_name=unique("ctx-ok")) as good, good.start_rollout() as attempt:
        attempt.log("fine")
    assert good.status == "finished"


def test_rerun_only_the_failed_tasks(client: rollout.Client) -> None:
    name = unique("rerun")
    client.create_dataset(name, [{"key": k, "instruction": k} for k in ("a", "b", "c")])
    first = client.start_run(name, num_repeats=2)
    assert len(first.tasks) == 6 and {t.repeat_index for t in first.tasks} == {0, 1}
    for item in first.tasks:
        attempt = first.start_rollout(item)
        if item.task.key == "b" and item.repeat_index == 1:
            attempt.finish(status="failed", error="wrong answer")
        else:
            attempt.finish(output="ok")
    first.finish()
    second = client.start_run(only_failed_from=first.number)
    assert [t.task.key for t in second.tasks] == ["b"]
    assert second.info.rerun_of is not None and second.info.rerun_of.number == first.number
    assert client.get_run(first.number).status == "finished"
    rows = list(client.list_rollouts(run=first.id, status="failed"))
    assert len(rows) == 1 and rows[0].error == "wrong answer"


def test_typed_errors(
    client: rollout.Client, live_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(rollout.NotFoundError) as missing:
        client.get_run(987654)
    assert missing.value.status == 404 and "/runs/987654" in str(missing.value)
    with pytest.raises(rollout.InvalidRequestError) as invalid:
        client.start_run(num_repeats=0)
    assert any(e.get("field") == "num_repeats" for e in invalid.value.errors)
    with pytest.raises(rollout.AuthenticationError):
        rollout.Client(live_server.base_url, "rk_wrong_key", spool_dir=tmp_path / "s").whoami()
    with pytest.raises(rollout.RolloutConnectionError, match="could not reach"):
        rollout.Client("http://127.0.0.1:9", "rk_x", max_retries=0, spool_dir=tmp_path / "s").whoami()
    monkeypatch.delenv("ROLLOUT_API_KEY", raising=False)
    monkeypatch.setenv("ROLLOUT_CONFIG_FILE", str(tmp_path / "none.json"))
    with pytest.raises(rollout.ConfigurationError, match="ROLLOUT_API_KEY"):
        rollout.Client(live_server.base_url, spool_dir=tmp_path / "s").whoami()


def test_several_clients_in_one_process(client: rollout.Client, live_server: Any, tmp_path: Path) -> None:
    key = client.create_key(unique("second"))
    other = rollout.Client(live_server.base_url, key.secret, spool_dir=tmp_path / "other-spool")
    assert other.whoami().id == client.whoami().id
    runs = [c.start_run(workflow_name=unique("multi")) for c in (client, other)]
    attempts = [r.start_rollout(input={"i": i}) for i, r in enumerate(runs)]
    for i, attempt in enumerate(attempts):
        attempt.message(f"from client {i}", role="assistant")
        attempt.finish()
    assert other.flush(timeout=30) and client.flush(timeout=30)
    with raw(live_server) as http:
        for i, attempt in enumerate(attempts):
            assert [e["content"] for e in all_events(http, attempt.id)] == [f"from client {i}"]
    assert any(k.id == key.id for k in client.list_keys())
    assert client.revoke_key(key.id).revoked_at is not None
    with pytest.raises(rollout.AuthenticationError):
        other.whoami()
    other.close()


def test_module_level_functions_use_the_environment(
    live_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROLLOUT_BASE_URL", live_server.base_url)
    monkeypatch.setenv("ROLLOUT_API_KEY", live_server.api_key)
    monkeypatch.setenv("ROLLOUT_SPOOL_DIR", str(tmp_path / "spool"))
    rollout.shutdown()
    try:
        run = rollout.start_run(workflow_name=unique("env"))
        attempt = run.start_rollout(input={"q": 1})
        assert rollout.current_attempt() is attempt
        attempt.message("hello", role="user")
        attempt.finish(output="bye")
        assert rollout.current_attempt() is None
        assert rollout.flush(timeout=30)
        detail = rollout.get_rollout(attempt.id)
        assert detail.status == "succeeded" and detail.output == "bye" and len(detail.events) == 1
        assert [r.id for r in rollout.list_rollouts(run=run.id)] == [attempt.id]
        assert rollout.get_run(run.number).id == run.id
        assert rollout.whoami().name
    finally:
        rollout.shutdown()
