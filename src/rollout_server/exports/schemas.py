"""Wire schemas for exports and imports."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from ..common.schemas import OutSchema, Schema, UTCTime
from ..runs.schemas import RunRef
from ..scoring.schemas import RunMetrics

ExportFormat = Literal["rollout", "nemo-gym", "openai-sft", "openai-dpo", "trl-sft", "trl-dpo", "grpo"]
FileFormat = Literal["jsonl", "parquet"]
ImportFormat = Literal["rollout", "nemo-gym"]


class ExportFilter(Schema):
    """Which rollouts to export. Every field narrows the selection; discarded rollouts are left out unless asked."""

    runs: list[str] | None = Field(None, description="Run IDs or numbers.")
    dataset: str | None = Field(None, description="Dataset name or ID: rollouts of its runs.")
    split: str | None = Field(None, description="Only tasks of this split.")
    status: list[Literal["running", "succeeded", "failed", "errored", "cancelled"]] | None = None
    score_name: str | None = Field(None, description="With score_min/score_max: rollouts having this score in range.")
    score_min: float | None = None
    score_max: float | None = None
    reward_min: float | None = None
    reward_max: float | None = None
    started_after: UTCTime | None = None
    started_before: UTCTime | None = None
    tags: list[str] | None = Field(None, description="Rollouts of runs carrying all these tags.")
    step: int | None = None
    include_discarded: bool = False
    limit: int | None = Field(None, ge=1, description="At most this many rollouts.")


class ExportOptions(Schema):
    margin: float = Field(0.1, ge=0, description="DPO formats: minimum reward difference of a pair.")
    pairs: Literal["all", "best_worst"] = Field("all", description="DPO formats: every qualifying pair, or only "
                                                "best against worst per group.")
    style: Literal["messages", "prompt_completion"] = Field("messages", description="trl-sft line shape.")
    group_by: Literal["auto", "task", "group_key"] = Field("auto", description="Grouping of DPO and GRPO formats.")


class ExportJobIn(Schema):
    """An export written by a background worker to an S3 destination."""

    format: ExportFormat
    file_format: FileFormat = "jsonl"
    destination: str = Field(pattern=r"^s3://[^/]+/.+", description="s3://bucket/key")
    filter: ExportFilter = Field(default_factory=ExportFilter)
    options: ExportOptions = Field(default_factory=ExportOptions)


class ExportJobOut(OutSchema):
    id: str
    status: str
    format: str
    file_format: str
    destination: str
    attempts: int
    error: str | None = None
    lines: int | None = None
    bytes: int | None = None
    created_at: datetime
    finished_at: datetime | None = None


class ImportResult(OutSchema):
    run: RunRef
    dataset: str | None = None
    dataset_version: int | None = None
    rollouts: int
    events: int
    scores: int
    tasks: int
    missing_files: int = Field(0, description="Task files named by SHA-256 that this workspace does not hold.")
    metrics: RunMetrics


class ImportParams(Schema):
    format: ImportFormat = "rollout"
    dataset: str | None = None
    workflow_name: str | None = None
    extra: dict[str, Any] | None = None
