"""Typed views of what the server returns. Unknown fields are kept: a newer server never breaks an older SDK."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Model(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True, protected_namespaces=())


class Workspace(Model):
    id: str
    name: str
    created_at: datetime | None = None


class ApiKey(Model):
    id: str
    name: str
    prefix: str = ""
    created_at: datetime | None = None
    last_used_at: datetime | None = None
    revoked_at: datetime | None = None


class ApiKeyCreated(ApiKey):
    secret: str


class File(Model):
    id: str
    name: str
    media_type: str = "application/octet-stream"
    size: int = 0
    sha256: str = ""
    created_at: datetime | None = None
    download_path: str = ""


class DatasetInfo(Model):
    id: str
    name: str
    description: str | None = None
    latest_version: int = 0
    task_count: int = 0
    created_at: datetime | None = None
    updated_at: datetime | None = None


class DatasetVersion(Model):
    id: str
    dataset_id: str
    number: int
    message: str | None = None
    task_count: int = 0
    added: int = 0
    updated: int = 0
    removed: int = 0
    created_at: datetime | None = None


class Task(Model):
    id: str
    dataset_id: str | None = None
    key: str
    instruction: str = ""
    input: dict[str, Any] | None = None
    expected_output: Any | None = None
    output_schema: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    split: str | None = None
    files: list[File] = Field(default_factory=list)
    version: int | None = None
    created_at: datetime | None = None


class RunTask(Model):
    """One item of `run.tasks`: a task and which repeat of it this is."""

    position: int
    repeat_index: int = 0
    task: Task


class RunRef(Model):
    id: str
    number: int


class RunAggregates(Model):
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


class RunInfo(Model):
    id: str
    number: int
    url: str = ""
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
    num_repeats: int = 1
    reward_score: str = "reward"
    rerun_of: RunRef | None = None
    status: str = "running"
    created_at: datetime | None = None
    finished_at: datetime | None = None
    task_count: int | None = None
    aggregates: RunAggregates | None = None


class Event(Model):
    id: str
    seq: int
    kind: str
    parent_id: str | None = None
    name: str | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    duration_ms: float | None = None
    metadata: dict[str, Any] | None = None


class Score(Model):
    id: str
    rollout_id: str
    name: str
    data_type: str = "number"
    value: float | bool | str
    source: str = "sdk"
    comment: str | None = None
    author: str | None = None
    created_at: datetime | None = None


class Rollout(Model):
    id: str
    run_id: str
    run_number: int
    attempt: int
    url: str = ""
    task_id: str | None = None
    task_key: str | None = None
    repeat_index: int = 0
    input: Any | None = None
    status: str = "running"
    output: Any | None = None
    error: str | None = None
    reward: float | None = None
    discarded: bool = False
    discard_reason: str | None = None
    step: int | None = None
    group_key: str | None = None
    metadata: dict[str, Any] | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    latency_ms: float | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cost: float = 0.0
    event_count: int = 0


class RolloutDetail(Rollout):
    """A rollout with its scores and its trace (all events when fetched with `get_rollout`)."""

    scores: list[Score] = Field(default_factory=list)
    events: list[Event] = Field(default_factory=list)
    events_next_cursor: str | None = None
