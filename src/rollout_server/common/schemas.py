"""Wire-schema base class and the page envelope every list endpoint returns."""

from __future__ import annotations

from typing import Generic, TypeVar

from pydantic import BaseModel, ConfigDict

T = TypeVar("T")


class Schema(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class OutSchema(BaseModel):
    model_config = ConfigDict(from_attributes=True, populate_by_name=True)


class Page(BaseModel, Generic[T]):
    """One page of a list. Pass `next_cursor` back as `cursor` for the next page; null means the end."""

    items: list[T]
    next_cursor: str | None = None
