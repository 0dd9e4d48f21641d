"""Scorers that call out: an LLM judge on any OpenAI-compatible chat endpoint, and an HTTP webhook.

Secrets are never stored in a scorer's configuration: `api_key_env` names an environment variable of the
process that runs the scorer (the server or `rollout-server worker`).
"""

from __future__ import annotations

import os
import re
from typing import Any

import httpx
import orjson
from pydantic import Field

from .base import ScoreResult, ScorerFailure, ScoringInput, as_text
from .checks import Check, CheckConfig

DEFAULT_RUBRIC = "Score how well the response completes the task, from 0 (useless) to 10 (perfect)."
JUDGE_SYSTEM = (
    "You are a strict evaluator. Read the task, the reference answer if any, and the response. Apply the rubric. "
    'Answer with one JSON object and nothing else: {"score": <number>, "reason": "<one sentence>"}.'
)


def _post(url: str, body: dict[str, Any], headers: dict[str, str], timeout: float) -> Any:
    try:
        with httpx.Client(timeout=timeout, trust_env=False) as client:
            response = client.post(url, content=orjson.dumps(body),
                                   headers={"content-type": "application/json", **headers})
    except httpx.HTTPError as error:
        raise ScorerFailure(f"POST {url} failed: {error.__class__.__name__}: {error}") from error
    if response.status_code >= 400:
        raise ScorerFailure(f"POST {url} answered {response.status_code}: {response.text[:300]}")
    try:
        return response.json()
    except ValueError as error:
        raise ScorerFailure(f"POST {url} answered with something that is not JSON: {response.text[:200]}") from error


def _secret_headers(api_key_env: str | None) -> dict[str, str]:
    if not api_key_env:
        return {}
    key = os.environ.get(api_key_env)
    if not key:
        raise ScorerFailure(f"the environment variable {api_key_env} (config.api_key_env) is not set where the "
                            "scorer runs (the server, or rollout-server worker)")
    return {"authorization": f"Bearer {key}"}


class LlmJudge(Check):
    data_type = "number"

    class Config(CheckConfig):
        base_url: str = Field(description="An OpenAI-compatible API root, e.g. https://api.openai.com/v1.")
        model: str
        rubric: str = DEFAULT_RUBRIC
        api_key_env: str | None = Field(None, description="Environment variable holding the API key.")
        min_score: float = 0.0
        max_score: float = 10.0
        temperature: float = 0.0
        include_expected: bool = True
        timeout: float | None = Field(None, gt=0)

    timeout_default = 60.0

    def prompt(self, item: ScoringInput) -> list[dict[str, str]]:
        task = item.task or {}
        lines = [f"Rubric:\n{self.config.rubric}", "", "Task:", task.get("instruction") or "(no instruction)"]  # type: ignore[attr-defined]
        if task.get("input") is not None or item.rollout.get("input") is not None:
            lines += ["", "Task input:", as_text(task.get("input") or item.rollout.get("input"))]
        if self.config.include_expected and item.expected() is not None:  # type: ignore[attr-defined]
            lines += ["", "Reference answer:", as_text(item.expected())]
        lines += ["", "Response:", as_text(item.answer())]
        return [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": "\n".join(lines)}]

    def check(self, item: ScoringInput) -> tuple[float | bool, str | None]:
        config: Any = self.config
        body = {"model": config.model, "messages": self.prompt(item), "temperature": config.temperature}
        answer = _post(config.base_url.rstrip("/") + "/chat/completions", body, _secret_headers(config.api_key_env),
                       config.timeout or self.timeout_default)
        try:
            content = answer["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError) as error:
            raise ScorerFailure(f"the judge's answer has no choices[0].message.content: {as_text(answer)[:200]}") \
                from error
        raw, reason = parse_verdict(content)
        span = config.max_score - config.min_score
        if span <= 0:
            raise ScorerFailure("config.max_score must be above config.min_score")
        return min(1.0, max(0.0, (raw - config.min_score) / span)), reason


_JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")


def parse_verdict(content: str) -> tuple[float, str | None]:
    """The judge's score and reason from a JSON object in its answer, or the first number in it."""
    match = _JSON_OBJECT.search(content)
    if match:
        try:
            verdict = orjson.loads(match.group(0))
        except orjson.JSONDecodeError:
            verdict = None
        if isinstance(verdict, dict) and isinstance(verdict.get("score"), int | float):
            reason = verdict.get("reason")
            return float(verdict["score"]), str(reason) if reason is not None else None
    number = _NUMBER.search(content)
    if number is None:
        raise ScorerFailure(f"the judge's answer holds no score: {content[:200]!r}")
    return float(number.group(0)), content.strip()[:500] or None


class Webhook(Check):
    """POSTs {rollout, task, events, run}; reads back {"scores": [{name, value, comment}]} or {"score": v}."""

    data_type = "number"

    class Config(CheckConfig):
        url: str
        headers: dict[str, str] = Field(default_factory=dict)
        api_key_env: str | None = None
        timeout: float | None = Field(None, gt=0)

    timeout_default = 60.0

    def __call__(self, item: ScoringInput) -> list[ScoreResult]:
        config: Any = self.config
        answer = _post(config.url, item.to_json(), {**config.headers, **_secret_headers(config.api_key_env)},
                       config.timeout or self.timeout_default)
        return results_from(answer, config.score_name or self.name)


def results_from(answer: Any, default_name: str) -> list[ScoreResult]:
    """Scores from what a webhook or a Python scorer returned: a number/bool/str, a dict or a list of dicts."""
    if isinstance(answer, ScoreResult):
        return [answer]
    if isinstance(answer, bool | int | float | str):
        return [ScoreResult(name=default_name, value=answer if isinstance(answer, bool | str) else float(answer))]
    if isinstance(answer, dict) and "scores" in answer:
        answer = answer["scores"]
    if isinstance(answer, dict):
        answer = [answer]
    if not isinstance(answer, list) or not answer:
        raise ScorerFailure(f"expected a score, {{\"score\": …}} or {{\"scores\": [...]}}, got {as_text(answer)[:200]}")
    results = []
    for entry in answer:
        if isinstance(entry, ScoreResult):
            results.append(entry)
            continue
        if not isinstance(entry, dict):
            raise ScorerFailure(f"a score must be an object, got {as_text(entry)[:100]}")
        value = entry.get("value", entry.get("score"))
        if not isinstance(value, bool | int | float | str):
            raise ScorerFailure(f"score {entry.get('name') or default_name!r} has no number, boolean or text value")
        results.append(ScoreResult(
            name=str(entry.get("name") or default_name),
            value=value if isinstance(value, bool | str) else float(value),
            data_type=entry.get("data_type"), comment=entry.get("comment") or entry.get("reason"),
        ))
    return results
