"""Wire schemas for rollouts, trace events and scores."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..common.schemas import INT32_MAX, INT64_MAX, OutSchema, Schema, UTCTime

EventKind = Literal["message", "reasoning", "llm_call", "tool_call", "tool_result", "error", "log", "span"]
FinishStatus = Literal["succeeded", "failed", "errored", "cancelled"]
MESSAGE_ROLES = ("system", "developer", "user", "assistant", "tool")
ID_PATTERN = r"^[A-Za-z0-9_.:\-]{1,80}$"


class EventIn(BaseModel):
    """One trace event. Fields beyond the common ones are the kind's body and are kept as sent:
    message (role, content), reasoning (content), llm_call (model, input, output, usage, cost),
    tool_call (name, arguments, call_id), tool_result (call_id, output, is_error), error (message),
    log (message, level), span (name). Events arrive inside a batch whose schema cleans the whole body
    (NUL characters, non-finite numbers) once."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False)

    id: str = Field(
        pattern=ID_PATTERN, description="Client-generated; a re-sent event with the same id is stored once."
    )
    kind: EventKind
    seq: int | None = Field(
        None, ge=0, le=INT64_MAX, description="Order within the rollout; assigned by the server when omitted."
    )
    parent_id: str | None = Field(None, pattern=ID_PATTERN, description="The span or call this event nests under.")
    name: str | None = Field(None, max_length=500)
    started_at: UTCTime | None = None
    ended_at: UTCTime | None = None
    metadata: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _check_kind_body(self) -> EventIn:
        body = self.model_extra or {}
        if self.kind == "message":
            if body.get("role") not in MESSAGE_ROLES:
                raise ValueError(f"a message needs a role, one of {', '.join(MESSAGE_ROLES)}")
            if "content" not in body:
                raise ValueError("a message needs content")
        elif self.kind == "tool_call" and not self.name:
            raise ValueError("a tool_call needs the tool's name")
        elif self.kind == "tool_result" and not body.get("call_id"):
            raise ValueError("a tool_result needs the call_id of its tool_call")
        elif self.kind == "error" and "message" not in body:
            raise ValueError("an error event needs a message")
        elif self.kind == "llm_call":
            usage = body.get("usage")
            if usage is not None and not isinstance(usage, dict):
                raise ValueError("llm_call usage must be an object of token counts")
            cost = body.get("cost")
            if cost is not None and (not isinstance(cost, int | float) or isinstance(cost, bool) or cost < 0):
                raise ValueError("llm_call cost must be a non-negative number")
        if self.started_at and self.ended_at and self.ended_at < self.started_at:
            raise ValueError("ended_at is before started_at")
        return self


class IngestEvent(EventIn):
    rollout_id: str = Field(description="The rollout (ro_…) this event belongs to.")


class EventBatch(Schema):
    events: list[EventIn] = Field(min_length=1)


class ScoreIn(Schema):
    id: str | None = Field(None, pattern=ID_PATTERN, description="Client-generated; a re-sent score is stored once.")
    name: str = Field(min_length=1, max_length=200)
    value: float | bool | str = Field(description="Number, boolean, category or text.")
    data_type: Literal["number", "boolean", "category", "text"] | None = Field(
        None, description="Default: number for numbers, boolean for booleans, category for strings."
    )
    source: str = Field("sdk", min_length=1, max_length=200, description="sdk, human, import or a scorer's name.")
    comment: str | None = None
    author: str | None = Field(None, max_length=320)


class IngestScore(ScoreIn):
    rollout_id: str


class IngestBatch(Schema):
    """Events and scores for many rollouts in one request: what the SDKs' background senders post."""

    events: list[IngestEvent] = Field(default_factory=list)
    scores: list[IngestScore] = Field(default_factory=list)
    finishes: list[IngestFinish] = Field(
        default_factory=list, description="Rollouts to finish, after this batch's events and scores are stored."
    )


class ItemResult(OutSchema):
    index: int
    id: str | None = None
    status: Literal["created", "duplicate", "rejected"]
    error: str | None = None


class IngestResult(OutSchema):
    created: int
    duplicates: int
    rejected: int
    events: list[ItemResult]
    scores: list[ItemResult] = Field(default_factory=list)
    finishes: list[ItemResult] = Field(
        default_factory=list, description="created: finished now; duplicate: it was already finished."
    )


class RolloutCreate(Schema):
    task_id: str | None = Field(None, description="The task (task_…) from the run's task list; omit for ad-hoc.")
    repeat_index: int = Field(0, ge=0, le=INT32_MAX)
    input: Any | None = Field(None, description="The input of an ad-hoc rollout (no task).")
    step: int | None = Field(None, ge=0, le=INT32_MAX, description="Training step this sample belongs to.")
    group_key: str | None = Field(None, max_length=500, description="Samples sharing a prompt share a group key.")
    metadata: dict[str, Any] | None = None
    client_key: str | None = Field(
        None, pattern=ID_PATTERN,
        description="Idempotency key: a retried start with the same key returns the same rollout.",
    )


class RolloutFinish(Schema):
    status: FinishStatus | None = Field(None, description="Default: failed when error is given, else succeeded.")
    output: Any | None = None
    error: str | None = None
    metadata: dict[str, Any] | None = None
    ended_at: UTCTime | None = Field(
        None, description="When the attempt ended, by the client's clock (default: when the server receives this). "
        "Kept between the rollout's start and now, so latency never includes delivery delay.",
    )


class IngestFinish(RolloutFinish):
    rollout_id: str


class ScoreOut(OutSchema):
    id: str
    rollout_id: str
    name: str
    data_type: str
    value: float | bool | str
    source: str
    comment: str | None = None
    author: str | None = None
    created_at: datetime


class EventOut(BaseModel):
    model_config = ConfigDict(extra="allow", json_schema_serialization_defaults_required=True)

    id: str
    seq: int
    kind: str
    parent_id: str | None = None
    name: str | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    duration_ms: float | None = None
    metadata: dict[str, Any] | None = None


class RolloutOut(OutSchema):
    id: str
    run_id: str
    run_number: int
    attempt: int
    url: str
    task_id: str | None = None
    task_key: str | None = None
    repeat_index: int
    input: Any | None = None
    status: str
    output: Any | None = None
    error: str | None = None
    reward: float | None = None
    advantage: float | None = Field(None, description="Group-relative advantage (POST /runs/{run}/advantages).")
    discarded: bool = False
    discard_reason: str | None = None
    step: int | None = None
    group_key: str | None = None
    metadata: dict[str, Any] | None = None
    started_at: datetime
    ended_at: datetime | None = None
    latency_ms: float | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cost: float = 0.0
    event_count: int = 0


class RolloutDetail(RolloutOut):
    scores: list[ScoreOut] = Field(default_factory=list)
    events: list[EventOut] = Field(default_factory=list, description="The first page of the trace.")
    events_next_cursor: str | None = Field(None, description="Pass to GET …/events?cursor= for the rest.")
