"""Scorer types by name: the built-ins, the remote ones, and Python scorers registered as entry points in the
`rollout.scorers` group (`[project.entry-points."rollout.scorers"] my_check = "pkg.mod:func"`).

A Python scorer is a callable `(item: ScoringInput, config: dict) -> result`, where result is a number, a boolean,
a string, a `ScoreResult`, `{"value": …, "comment": …}` or a list of those. A class is instantiated with the
config's keys and then called with the item.
"""

from __future__ import annotations

from functools import partial
from importlib.metadata import entry_points
from typing import Any

from .base import Scorer, ScorerConfigError, ScoreResult, ScoringInput
from .checks import CHECKS
from .remote import LlmJudge, Webhook, results_from

ENTRY_POINT_GROUP = "rollout.scorers"
BUILTIN_TYPES: dict[str, Any] = {**CHECKS, "llm_judge": LlmJudge, "webhook": Webhook}


def python_scorers() -> dict[str, Any]:
    """Entry points of the `rollout.scorers` group installed in this process, by name (not loaded yet)."""
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def available_types() -> list[tuple[str, str]]:
    """(type, where it comes from) for every scorer type this process can run."""
    found = [(name, "builtin") for name in BUILTIN_TYPES]
    found += [(name, f"entry point {ep.value}") for name, ep in sorted(python_scorers().items())
              if name not in BUILTIN_TYPES]
    return found


def _python_scorer(name: str, entry_name: str, config: dict[str, Any]) -> Scorer:
    entry = python_scorers().get(entry_name)
    if entry is None:
        known = ", ".join(sorted(python_scorers())) or "none are installed"
        raise ScorerConfigError(f"no Python scorer named {entry_name!r} in the {ENTRY_POINT_GROUP} entry points "
                                f"of this process ({known})", field="entry_point")
    target = entry.load()
    if isinstance(target, type):
        instance = target(**config)

        def call_instance(item: ScoringInput) -> list[ScoreResult]:
            return results_from(instance(item), name)

        return call_instance

    def call(item: ScoringInput, options: dict[str, Any]) -> list[ScoreResult]:
        return results_from(target(item, options), name)

    return partial(call, options=config)


def build_scorer(name: str, type_: str, config: dict[str, Any] | None, *, timeout: float = 60.0) -> Scorer:
    """A ready-to-call scorer, or ScorerConfigError naming what is wrong with the configuration."""
    options = dict(config or {})
    kind = BUILTIN_TYPES.get(type_)
    if kind is not None:
        scorer = kind(name, options)
        if hasattr(scorer, "timeout_default"):
            scorer.timeout_default = timeout
        return scorer  # type: ignore[no-any-return]
    if type_ == "python":
        entry_name = options.pop("entry_point", None)
        if not isinstance(entry_name, str):
            raise ScorerConfigError("a python scorer needs config.entry_point, the entry point's name",
                                    field="entry_point")
        return _python_scorer(name, entry_name, options)
    if type_ in python_scorers():
        return _python_scorer(name, type_, options)
    known = ", ".join(name for name, _ in available_types())
    raise ScorerConfigError(f"unknown scorer type {type_!r}; use one of: {known}, or python with an entry point",
                            field="type")
