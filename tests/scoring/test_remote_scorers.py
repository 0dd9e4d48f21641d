"""The LLM judge against a local fake OpenAI-compatible endpoint, and the webhook scorer."""

from __future__ import annotations

from typing import Any

import pytest

from rollout_server.scoring.base import ScorerFailure, ScoringInput
from rollout_server.scoring.registry import build_scorer
from rollout_server.scoring.remote import parse_verdict
from tests.scoring.fake_http import FakeEndpoint, chat_answer


def case() -> ScoringInput:
    return ScoringInput(rollout={"id": "ro_1", "output": "Paris", "status": "succeeded"},
                        task={"instruction": "Capital of France?", "expected_output": "Paris"},
                        events=[{"kind": "message", "role": "user", "content": "Capital of France?"}],
                        run={"number": 1})


def test_llm_judge_sends_the_rubric_and_normalises_the_score(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGE_KEY", "sk-test-123")

    def answer(path: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
        return 200, chat_answer('Verdict: {"score": 8, "reason": "correct and concise"}')

    with FakeEndpoint(answer) as judge:
        scorer = build_scorer("judge", "llm_judge", {"base_url": judge.url + "/v1", "model": "judge-model",
                                                     "rubric": "Is the capital right?", "api_key_env": "JUDGE_KEY"})
        results = scorer(case())
    assert results[0].name == "judge"
    assert results[0].value == pytest.approx(0.8)
    assert results[0].comment == "correct and concise"
    path, body, headers = judge.requests[0]
    assert path == "/v1/chat/completions"
    assert body["model"] == "judge-model" and body["temperature"] == 0
    prompt = body["messages"][1]["content"]
    assert "Is the capital right?" in prompt and "Capital of France?" in prompt and "Reference answer" in prompt
    assert headers["authorization"] == "Bearer sk-test-123"


def test_llm_judge_errors_are_scorer_failures(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeEndpoint(lambda *_: (500, {"error": "overloaded"})) as judge:
        scorer = build_scorer("judge", "llm_judge", {"base_url": judge.url, "model": "m"})
        with pytest.raises(ScorerFailure, match="500"):
            scorer(case())
    with FakeEndpoint(lambda *_: (200, chat_answer("I refuse to grade."))) as judge, \
            pytest.raises(ScorerFailure, match="no score"):
        build_scorer("judge", "llm_judge", {"base_url": judge.url, "model": "m"})(case())
    monkeypatch.delenv("MISSING_KEY", raising=False)
    with pytest.raises(ScorerFailure, match="MISSING_KEY"):
        build_scorer("judge", "llm_judge", {"base_url": "http://127.0.0.1:9", "model": "m",
                                            "api_key_env": "MISSING_KEY"})(case())


def test_verdict_parsing() -> None:
    assert parse_verdict('{"score": 3, "reason": "meh"}') == (3.0, "meh")
    assert parse_verdict("Score: 7/10")[0] == 7.0


def test_webhook_posts_the_rollout_and_reads_scores_back() -> None:
    def answer(path: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
        ok = body["rollout"]["output"] == body["task"]["expected_output"]
        return 200, {"scores": [{"name": "hook_ok", "value": ok, "comment": "compared"},
                                {"name": "hook_len", "value": len(body["rollout"]["output"])}]}

    with FakeEndpoint(answer) as hook:
        results = build_scorer("hook", "webhook", {"url": hook.url + "/score", "headers": {"x-team": "rl"}})(case())
    assert [(r.name, r.value) for r in results] == [("hook_ok", True), ("hook_len", 5.0)]
    assert hook.requests[0][0] == "/score"
    assert hook.requests[0][2]["x-team"] == "rl"
    assert hook.requests[0][1]["events"][0]["content"] == "Capital of France?"

    with FakeEndpoint(lambda *_: (200, {"score": 0.25})) as hook:
        results = build_scorer("hook", "webhook", {"url": hook.url})(case())
    assert [(r.name, r.value) for r in results] == [("hook", 0.25)]
    with FakeEndpoint(lambda *_: (200, {"nothing": True})) as hook, pytest.raises(ScorerFailure):
        build_scorer("hook", "webhook", {"url": hook.url})(case())
