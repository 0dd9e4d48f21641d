"""Wire schemas for scorers, on-demand scoring, scorer errors, advantages, discards and metrics."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field, model_validator

from ..common.schemas import OutSchema, Schema

FinishedStatus = Literal["succeeded", "failed", "errored", "cancelled"]
DiscardStatus = Literal["failed", "errored", "cancelled"]
NAME_PATTERN = r"^[A-Za-z0-9_.:\-]{1,200}$"


class ScorerIn(Schema):
    """A scorer on a dataset (all its runs) or on one run. Posting an existing name for the same target replaces it."""

    dataset: str | None = Field(None, description="Dataset name or ID.")
    run: str | None = Field(None, description="Run ID or number.")
    name: str = Field(pattern=NAME_PATTERN, description="The scorer's name: source (and default name) of its scores.")
    type: str = Field(min_length=1, max_length=100, description="A built-in type, `python`, or an entry point name.")
    config: dict[str, Any] = Field(default_factory=dict)
    enabled: bool = True

    @model_validator(mode="after")
    def _one_target(self) -> ScorerIn:
        if (self.dataset is None) == (self.run is None):
            raise ValueError("give exactly one of dataset or run")
        return self


class InlineScorer(Schema):
    name: str = Field(pattern=NAME_PATTERN)
    type: str = Field(min_length=1, max_length=100)
    config: dict[str, Any] = Field(default_factory=dict)


class ScorerOut(OutSchema):
    id: str
    name: str
    type: str
    config: dict[str, Any]
    enabled: bool
    dataset_id: str | None = None
    run_id: str | None = None
    created_at: datetime
    updated_at: datetime


class ScorerTypeOut(OutSchema):
    type: str
    source: str = Field(description="builtin, or the entry point that provides it.")


class ScoreRunRequest(Schema):
    scorers: list[str] | None = Field(None, description="Names of configured scorers to run (default: all of them).")
    inline: list[InlineScorer] = Field(default_factory=list, description="Ad-hoc scorers, not saved.")
    rollouts: list[str] | None = Field(None, description="Only these rollouts (default: every finished one).")
    statuses: list[FinishedStatus] = Field(
        default_factory=lambda: list[FinishedStatus](["succeeded", "failed", "errored", "cancelled"]))


class ScoringStatus(OutSchema):
    run_id: str
    run_number: int
    queued: int = 0
    running: int = 0
    done: int = 0
    failed: int = Field(0, description="Jobs that ended with at least one scorer error.")
    total: int = 0
    errors: int = Field(0, description="(rollout, scorer) pairs whose last attempt failed (see scorer-errors).")


class ScoreRunResult(ScoringStatus):
    enqueued: int


class ScorerErrorOut(OutSchema):
    rollout_id: str
    attempt: int
    scorer: str
    message: str
    detail: str | None = None
    created_at: datetime


class AdvantagesRequest(Schema):
    normalization: Literal["grpo", "dr_grpo", "batch"] = Field(
        "grpo", description="grpo: (r-mean)/(std+eps); dr_grpo: r-mean; batch: (r-mean)/(batch std+eps).")
    epsilon: float = Field(1e-6, ge=0)
    std_ddof: Literal[0, 1] = Field(1, description="1: sample std (torch, TRL, verl); 0: population std.")
    group_by: Literal["auto", "task", "group_key"] = Field(
        "auto", description="auto: the group key when set, else the task; always within a training step.")
    discard_zero_variance: bool = True
    discard_statuses: list[DiscardStatus] = Field(default_factory=lambda: list[DiscardStatus](["errored"]))
    discard_unscored: bool = False


class AdvantagesResult(OutSchema):
    run_id: str
    run_number: int
    normalization: str
    rollouts: int
    scored: int
    groups: int
    discarded_zero_variance: int
    discarded_errored: int
    discarded_unscored: int
    mean_reward: float | None = None
    std_reward: float | None = None


class DiscardIn(Schema):
    discarded: bool = True
    reason: str | None = Field(None, max_length=200)


class DiscardOut(OutSchema):
    id: str
    discarded: bool
    discard_reason: str | None = None


class Stat(OutSchema):
    count: int
    mean: float
    std: float = Field(description="Population standard deviation.")
    min: float
    max: float


class RunMetrics(OutSchema):
    run_id: str
    run_number: int
    reward_score: str
    rollout_count: int
    discarded_count: int
    reward: Stat | None = None
    advantage: Stat | None = None
    scores: dict[str, Stat] = Field(default_factory=dict, description="Every numeric (and boolean) score by name.")
    errors: dict[str, int] = Field(default_factory=dict, description="Scorer errors by scorer.")
    scoring: ScoringStatus
