"""The built-in scorers on plain inputs (no database): each check, its configuration errors, and the
weighted combination."""

from __future__ import annotations

from typing import Any

import pytest

from rollout_server.scoring.base import ScorerConfigError, ScorerFailure, ScoringInput, parse_path
from rollout_server.scoring.registry import build_scorer


def item(output: Any, expected: Any = None, schema: dict[str, Any] | None = None,
         events: list[dict[str, Any]] | None = None) -> ScoringInput:
    return ScoringInput(rollout={"id": "ro_1", "output": output, "status": "succeeded"},
                        task={"instruction": "q", "expected_output": expected, "output_schema": schema},
                        events=events or [])


def value(type_: str, config: dict[str, Any], case: ScoringInput) -> Any:
    results = build_scorer("check", type_, config)(case)
    return results[0].value


@pytest.mark.parametrize(("type_", "config", "output", "expected", "passed"), [
    ("exact_match", {}, "Paris", "Paris", True),
    ("exact_match", {}, " Paris\n", "Paris", True),
    ("exact_match", {}, "paris", "Paris", False),
    ("exact_match", {}, {"a": 1}, {"a": 1}, True),
    ("exact_match", {}, '{"a": 1}', {"a": 1}, True),
    ("exact_match", {"expected": 42}, 42, None, True),
    ("normalized_match", {}, "The Paris!", "paris", True),
    ("exact_match", {"normalize": True}, "  an   APPLE.", "apple", True),
    ("contains", {"value": "cat"}, "The Cat sat", None, True),
    ("contains", {"value": "cat", "case_sensitive": True}, "The Cat sat", None, False),
    ("contains", {"value": ["cat", "dog"], "mode": "all"}, "cat only", None, False),
    ("contains", {"value": ["cat", "dog"], "mode": "any"}, "cat only", None, True),
    ("not_contains", {"value": ["sorry", "cannot"]}, "Here it is", None, True),
    ("not_contains", {"value": ["sorry", "cannot"]}, "Sorry, no", None, False),
    ("regex", {"pattern": r"\d{3}-\d{4}"}, "call 555-1234", None, True),
    ("regex", {"pattern": r"\d+", "full_match": True}, "12a", None, False),
    ("regex", {"pattern": "yes", "ignore_case": True}, "YES", None, True),
    ("json_path_equals", {"path": "$.answer.value", "expected": 3}, {"answer": {"value": 3}}, None, True),
    ("json_path_equals", {"path": "items[1]"}, '{"items": [1, 2]}', {"items": [1, 2]}, True),
    ("json_path_equals", {"path": "items.0"}, {"items": [5]}, {"items": [4]}, False),
    ("numeric_close", {}, "The answer is 3.14159", 3.1416, False),
    ("numeric_close", {"abs_tol": 0.001}, "The answer is 3.14159", 3.1416, True),
    ("numeric_close", {"rel_tol": 0.01}, 101, "100", True),
    ("numeric_close", {}, "no number", 1, False),
    ("json_valid", {}, '{"a": [1, 2]}', None, True),
    ("json_valid", {}, "{not json", None, False),
    ("json_valid", {}, {"already": "parsed"}, None, True),
    ("json_keys", {"keys": ["a", "b"]}, '{"a": 1, "b": 2, "c": 3}', None, True),
    ("json_keys", {"keys": ["a", "b"]}, {"a": 1}, None, False),
    ("length", {"min": 2, "max": 5}, "abcd", None, True),
    ("length", {"max": 2, "unit": "words"}, "one two three", None, False),
])
def test_builtin_checks(type_: str, config: dict[str, Any], output: Any, expected: Any, passed: bool) -> None:
    assert value(type_, config, item(output, expected)) is passed


def test_json_schema_validates_against_the_task_output_schema() -> None:
    schema = {"type": "object", "required": ["answer"], "properties": {"answer": {"type": "integer"}}}
    assert value("json_schema", {}, item('{"answer": 4}', schema=schema)) is True
    results = build_scorer("schema", "json_schema", {})(item({"answer": "four"}, schema=schema))
    assert results[0].value is False
    assert "answer" in (results[0].comment or "")
    assert value("json_schema", {"schema": {"type": "array"}}, item("[1]")) is True
    with pytest.raises(ScorerFailure, match="output_schema"):
        build_scorer("schema", "json_schema", {})(item("{}"))


def test_answer_falls_back_to_the_last_assistant_message() -> None:
    events = [{"kind": "message", "role": "user", "content": "2+2?"},
              {"kind": "message", "role": "assistant", "content": [{"type": "output_text", "text": "4"}]}]
    assert value("exact_match", {}, item(None, "4", events=events)) is True


def test_missing_expected_output_is_a_scorer_failure_not_a_false() -> None:
    with pytest.raises(ScorerFailure, match="expected_output"):
        build_scorer("m", "exact_match", {})(item("x"))


def test_weighted_combination_scores_and_passes() -> None:
    config = {"threshold": 0.7, "checks": [
        {"type": "contains", "value": "paris", "weight": 2},
        {"type": "length", "max": 5, "weight": 1},
        {"type": "json_valid", "weight": 1},
    ]}
    results = build_scorer("combo", "weighted", config)(item("Paris is the capital"))
    assert [r.name for r in results] == ["combo", "combo_pass"]
    assert results[0].value == pytest.approx(0.5)
    assert results[1].value is False
    assert "contains=1" in (results[0].comment or "")


@pytest.mark.parametrize(("type_", "config", "field"), [
    ("regex", {"pattern": "("}, "pattern"),
    ("contains", {}, "value"),
    ("contains", {"value": "x", "bogus": 1}, "bogus"),
    ("json_keys", {"keys": []}, "keys"),
    ("weighted", {"checks": [{"type": "nope"}]}, "checks.0.type"),
    ("weighted", {"checks": [{"type": "regex", "pattern": "["}]}, "checks.0.pattern"),
    ("llm_judge", {"model": "m"}, "base_url"),
    ("python", {}, "entry_point"),
    ("no_such_type", {}, "type"),
])
def test_configuration_errors_name_the_field(type_: str, config: dict[str, Any], field: str) -> None:
    with pytest.raises(ScorerConfigError) as caught:
        build_scorer("s", type_, config)
    assert caught.value.field == field


def test_paths() -> None:
    assert parse_path("$.a.b[0]") == ["a", "b", 0]
    assert parse_path('a["odd key"].2') == ["a", "odd key", 2]
