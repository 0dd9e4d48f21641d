"""Wire-schema base class and the page envelope every list endpoint returns."""

from __future__ import annotations

import math
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, model_validator

T = TypeVar("T")
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


def clean_json(value: Any) -> Any:
    """Make client JSON storable everywhere: NUL characters (which PostgreSQL text and JSONB refuse)
    become U+FFFD, and non-finite numbers, which JSON cannot hold, are refused."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd") if "\x00" in value else value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("numbers must be finite (no NaN or Infinity)")
        return value
    if isinstance(value, dict):
        return {clean_json(k): clean_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clean_json(v) for v in value]
    return value


class CleanInput(BaseModel):
    """Base of every request body: cleans NUL characters and refuses non-finite numbers before validation."""

    @model_validator(mode="before")
    @classmethod
    def _clean(cls, data: Any) -> Any:
        return clean_json(data)


class Schema(CleanInput):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, allow_inf_nan=False)


class OutSchema(BaseModel):
    # Fields with defaults are always present in responses; say so in the schema so generated clients agree.
    model_config = ConfigDict(from_attributes=True, populate_by_name=True,
                              json_schema_serialization_defaults_required=True)


class Page(BaseModel, Generic[T]):
    """One page of a list. Pass `next_cursor` back as `cursor` for the next page; null means the end."""

    model_config = ConfigDict(json_schema_serialization_defaults_required=True)

    items: list[T]
    next_cursor: str | None = None
