"""Wire-schema base class and the page envelope every list endpoint returns."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from typing import Annotated, Any, Generic, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, model_validator

T = TypeVar("T")
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


def _assume_utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


# A timestamp from a client; one without a zone is taken as UTC, so every comparison is well defined.
UTCTime = Annotated[datetime, AfterValidator(_assume_utc)]


class CheckedJSON(dict[str, Any]):
    """A JSON object parsed by orjson from a body with no escaped NUL (`\\u0000`) in it: orjson refuses NaN,
    Infinity and out-of-range numbers, so there is nothing for `clean_json` to do (api/routing.py)."""


def clean_json(value: Any) -> Any:
    """Make client JSON storable everywhere: NUL characters (which PostgreSQL text and JSONB refuse)
    become U+FFFD, and non-finite numbers, which JSON cannot hold, are refused."""
    # Fast path, in C: almost every body has neither, and walking it in Python costs more than parsing it.
    try:
        text = json.dumps(value, allow_nan=False)
    except ValueError:
        raise ValueError("numbers must be finite (no NaN or Infinity)") from None
    except TypeError:
        return _walk(value)
    return _walk(value) if "\\u0000" in text else value


def _walk(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd") if "\x00" in value else value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("numbers must be finite (no NaN or Infinity)")
        return value
    if isinstance(value, dict):
        return {_walk(k): _walk(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v) for v in value]
    return value


class CleanInput(BaseModel):
    """Base of every request body: cleans NUL characters and refuses non-finite numbers before validation."""

    @model_validator(mode="before")
    @classmethod
    def _clean(cls, data: Any) -> Any:
        if type(data) is CheckedJSON:
            return data  # parsed from a request body already known to need no cleaning
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
