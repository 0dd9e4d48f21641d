"""Wire schemas for runs."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from ..common.schemas import INT32_MAX, OutSchema, Schema
from ..datasets.schemas import TaskOut

FailedStatus = Literal["failed", "errored", "cancelled", "running"]


class RunCreate(Schema):
    dataset: str | None = Field(None, description="Dataset name or ID; omit for production traffic (ad-hoc tasks).")
    dataset_version: int | None = Field(None, ge=1, le=INT32_MAX, description="Version to pin; default: the latest.")
    workflow_name: str | None = Field(None, max_length=200)
    group_id: str | None = Field(None, max_length=200)
    agent_name: str | None = Field(None, max_length=200)
    agent_version: str | None = Field(None, max_length=100)
    model: str | None = Field(None, max_length=200)
    params: dict[str, Any] | None = None
    tags: list[str] | None = None
    num_repeats: int = Field(1, ge=1, le=1000)
    reward_score: str = Field("reward", min_length=1, max_length=200, description="Which score is the reward.")
    only_failed_from: str | None = Field(
        None, description="Run ID or number: run only the tasks that failed there (dataset defaults to that run's)."
    )
    client_key: str | None = Field(
        None, pattern=r"^[A-Za-z0-9_.:\-]{1,80}$",
        description="Idempotency key: starting again with the same key returns the same run.",
    )
    failed_statuses: list[FailedStatus] = Field(
        default_factory=lambda: list[FailedStatus](["failed", "errored"]),
        description="Rollout statuses that count as failed for only_failed_from.",
    )
    reward_below: float | None = Field(
        None, description="With only_failed_from: also re-run the tasks whose reward there was below this.",
    )


class RunFinish(Schema):
    status: Literal["finished", "failed", "cancelled"] = "finished"


class RunRef(OutSchema):
    id: str
    number: int


class RunOut(OutSchema):
    id: str
    number: int
    url: str
    dataset_id: str | None = None
    dataset_name: str | None = None
    dataset_version: int | None = None
    workflow_name: str | None = None
    group_id: str | None = None
    agent_name: str | None = None
    agent_version: str | None = None
    model: str | None = None
    params: dict[str, Any] | None = None
    tags: list[str] | None = None
    num_repeats: int
    reward_score: str
    rerun_of: RunRef | None = None
    rerun_reward_below: float | None = None
    status: str
    created_at: datetime
    finished_at: datetime | None = None


class RunAggregates(OutSchema):
    rollout_count: int = 0
    by_status: dict[str, int] = Field(default_factory=dict)
    mean_reward: float | None = None
    scored_count: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cost: float = 0.0
    latency_p50_ms: float | None = None
    latency_p95_ms: float | None = None


class RunDetail(RunOut):
    task_count: int = Field(description="Items in the run's task list (tasks x repeats).")
    aggregates: RunAggregates


class RunTaskItem(OutSchema):
    position: int = Field(description="0-based place in the run's task list.")
    repeat_index: int
    task: TaskOut
