"""Aligning the steps of 2-4 rollouts for the compare view: each rollout's story is matched against the
first one's by step signature (kind and tool or role), so the same step sits on the same row."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from .story import Item

SKIP_KINDS = {"span", "log"}


def signature(item: Item) -> str:
    if item.kind == "tool_call":
        return f"tool:{item.event.name}"
    if item.kind == "message":
        return f"message:{item.payload.get('role')}"
    if item.kind == "llm_call":
        return "llm_call"
    return item.kind


@dataclass
class Row:
    cells: list[Item | None]


def align(stories: list[list[Item]]) -> list[Row]:
    stories = [[i for i in story if i.kind not in SKIP_KINDS] for story in stories]
    base = stories[0]
    width = len(stories)
    main: list[list[Item | None]] = [[item] + [None] * (width - 1) for item in base]
    # Rows inserted after base position i (index -1: before the first base row).
    extra: dict[int, list[list[Item | None]]] = {}
    base_sigs = [signature(i) for i in base]
    for column in range(1, width):
        other = stories[column]
        matcher = difflib.SequenceMatcher(None, base_sigs, [signature(i) for i in other], autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag in ("equal", "replace"):
                paired = min(i2 - i1, j2 - j1)
                for k in range(paired):
                    main[i1 + k][column] = other[j1 + k]
                for j in range(j1 + paired, j2):
                    row: list[Item | None] = [None] * width
                    row[column] = other[j]
                    extra.setdefault(i1 + paired - 1, []).append(row)
            elif tag == "insert":
                for j in range(j1, j2):
                    row = [None] * width
                    row[column] = other[j]
                    extra.setdefault(i1 - 1, []).append(row)
    rows = [Row(cells) for cells in extra.get(-1, [])]
    for index, cells in enumerate(main):
        rows.append(Row(cells))
        rows.extend(Row(c) for c in extra.get(index, []))
    return rows
