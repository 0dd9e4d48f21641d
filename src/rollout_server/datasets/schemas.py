"""Wire schemas for datasets, versions and tasks."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from ..common.schemas import OutSchema, Schema
from ..files.schemas import FileOut

KEY_PATTERN = r"^[^\x00-\x1f/]{1,500}$"


class TaskIn(Schema):
    key: str | None = Field(
        None, pattern=KEY_PATTERN, description="Stable name inside the dataset; generated if omitted."
    )
    instruction: str = ""
    input: dict[str, Any] | None = None
    expected_output: Any | None = None
    output_schema: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    split: str | None = Field(None, max_length=100)
    files: list[str] = Field(default_factory=list, description="IDs of uploaded files (file_…), in order.")


class TaskUpdate(Schema):
    """Fields given replace the task's current values; fields left out are kept."""

    key: str = Field(pattern=KEY_PATTERN)
    instruction: str | None = None
    input: dict[str, Any] | None = None
    expected_output: Any | None = None
    output_schema: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    split: str | None = None
    files: list[str] | None = None


class DatasetCreate(Schema):
    name: str = Field(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f/]+$")
    description: str | None = None
    tasks: list[TaskIn] = Field(default_factory=list, max_length=100_000)
    message: str | None = None


class VersionCreate(Schema):
    """One new immutable version: tasks added, updated and removed in one step."""

    message: str | None = None
    add: list[TaskIn] = Field(default_factory=list, max_length=100_000)
    update: list[TaskUpdate] = Field(default_factory=list, max_length=100_000)
    remove: list[str] = Field(default_factory=list, description="Keys of tasks to remove.")


class AttachFiles(Schema):
    files: list[str] = Field(min_length=1, description="File IDs to append to the task's files.")
    message: str | None = None


class DatasetOut(OutSchema):
    id: str
    name: str
    description: str | None = None
    latest_version: int
    task_count: int
    created_at: datetime
    updated_at: datetime


class VersionOut(OutSchema):
    id: str
    dataset_id: str
    number: int
    message: str | None = None
    task_count: int
    added: int
    updated: int
    removed: int
    created_at: datetime


class TaskOut(OutSchema):
    id: str
    dataset_id: str
    key: str
    instruction: str
    input: dict[str, Any] | None = None
    expected_output: Any | None = None
    output_schema: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    split: str | None = None
    files: list[FileOut] = Field(default_factory=list)
    version: int = Field(description="The dataset version this revision of the task first appeared in.")
    created_at: datetime


class DiffItem(OutSchema):
    key: str
    change: Literal["added", "removed", "changed"]
    fields: list[str] = Field(default_factory=list, description="For a changed task: the fields that differ.")
    before: TaskOut | None = None
    after: TaskOut | None = None


class DiffPage(OutSchema):
    from_version: int = Field(description="0 stands for the empty dataset before version 1.")
    to_version: int
    items: list[DiffItem]
    next_cursor: str | None = None


class DatasetImportResult(OutSchema):
    dataset_id: str
    dataset: str
    version: int = Field(description="The new version, or the latest when nothing changed.")
    created_dataset: bool
    changed: bool
    tasks: int = Field(description="Tasks in the version.")
    added: int
    updated: int
    removed: int
    unchanged: int
    files: int = Field(description="Distinct files referenced by the imported tasks.")


class PromoteRollout(Schema):
    dataset: str = Field(min_length=1, max_length=200, description="Dataset name or ID; a new name creates it.")
    key: str | None = Field(None, pattern=KEY_PATTERN, description="Task key; default: the rollout's task key "
                            "(or run<N>-attempt<M> for ad-hoc input). An existing key gets a new revision.")
    use_output_as_expected: bool = False
    message: str | None = None


RolloutStatus = Literal["failed", "errored", "cancelled", "running", "succeeded"]


class PromoteRun(Schema):
    dataset: str = Field(min_length=1, max_length=200, description="Dataset name or ID; a new name creates it.")
    statuses: list[RolloutStatus] = Field(
        default_factory=lambda: list[RolloutStatus](["failed", "errored"]), description="Rollout statuses to promote.")
    reward_below: float | None = Field(None, description="Also promote rollouts whose reward is below this.")
    use_output_as_expected: bool = False
    message: str | None = None


class PromoteResult(OutSchema):
    dataset_id: str
    dataset: str
    version: int
    created_dataset: bool
    keys: list[str] = Field(description="Keys of the tasks written, in order.")
    added: int
    updated: int
