"""Wire schemas for datasets, versions and tasks."""

from __future__ import annotations

from datetime import datetime
from typing import Any

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
