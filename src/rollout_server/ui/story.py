"""A trace as a story (flat view) and as a time chart (Gantt view), one page of events at a time.

Pages of a long trace are built independently: a tool call whose result falls on a later page gets
it looked up by call id, and a result whose call was on an earlier page is skipped (it was shown with
its call). Nesting depth comes from the parent chain, looked up across pages when needed.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import quote

from markupsafe import Markup
from sqlalchemy.orm import Session

from ..models import TraceEvent
from ..rollouts.repository import RolloutRepository

MAX_DEPTH_LOOKUPS = 8


@dataclass
class Item:
    kind: str
    event: TraceEvent
    depth: int = 0
    result: TraceEvent | None = None
    payload: dict[str, Any] = field(default_factory=dict)
    result_payload: dict[str, Any] = field(default_factory=dict)

    @property
    def raw(self) -> dict[str, Any]:
        """The event as the API returns it (common fields, then the kind's body)."""
        return _raw(self.event, self.payload)

    @property
    def raw_result(self) -> dict[str, Any] | None:
        return _raw(self.result, self.result_payload) if self.result is not None else None

    @property
    def is_blob(self) -> bool:
        return bool(self.event.payload_blob)

    @property
    def is_error(self) -> bool:
        if self.kind == "error":
            return True
        return bool(self.result_payload.get("is_error")) or (self.kind == "tool_result"
                                                             and bool(self.payload.get("is_error")))

    @property
    def usage(self) -> dict[str, Any]:
        usage = self.payload.get("usage")
        return usage if isinstance(usage, dict) else {}

    @property
    def tokens(self) -> int | None:
        usage = self.usage
        total = usage.get("total_tokens")
        if isinstance(total, int | float) and not isinstance(total, bool):
            return int(total)
        parts = [usage.get(k) for k in ("input_tokens", "prompt_tokens", "output_tokens", "completion_tokens")]
        numbers = [int(p) for p in parts if isinstance(p, int | float) and not isinstance(p, bool)]
        return sum(numbers) if numbers else None

    @property
    def cost(self) -> float | None:
        cost = self.payload.get("cost")
        return float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None

    @property
    def duration_ms(self) -> float | None:
        if self.result is not None and self.event.started_at and (self.result.ended_at or self.result.started_at):
            end = self.result.ended_at or self.result.started_at
            assert end is not None
            return max(0.0, (end - self.event.started_at).total_seconds() * 1000)
        return self.event.duration_ms


def _raw(event: TraceEvent, payload: dict[str, Any]) -> dict[str, Any]:
    common = {"id": event.event_id, "kind": event.kind, "seq": event.seq, "parent_id": event.parent_id,
              "name": event.name, "started_at": event.started_at, "ended_at": event.ended_at,
              "duration_ms": event.duration_ms, "metadata": event.metadata_}
    return {**{k: v for k, v in common.items() if v is not None}, **payload}


def _payload(event: TraceEvent | None) -> dict[str, Any]:
    if event is None or event.payload_blob:
        return {}
    return dict(event.payload or {})


def _call_id(event: TraceEvent) -> str | None:
    value = (event.payload or {}).get("call_id")
    return value if isinstance(value, str) else None


def depths(session: Session, rollout_id: str, events: list[TraceEvent]) -> dict[str, int]:
    """Nesting depth of each event: the length of its parent chain (looked up beyond this page)."""
    parent_of: dict[str, str | None] = {e.event_id: e.parent_id for e in events}
    repo = RolloutRepository(session)
    for _ in range(MAX_DEPTH_LOOKUPS):
        missing = {p for p in parent_of.values() if p and p not in parent_of}
        if not missing:
            break
        found = repo.events_by_ids(rollout_id, list(missing))
        for event in found:
            parent_of[event.event_id] = event.parent_id
        for event_id in missing - {e.event_id for e in found}:
            parent_of[event_id] = None  # a parent the trace never sent: treat as top level
    out: dict[str, int] = {}
    for event in events:
        depth, current, seen = 0, event.parent_id, set()
        while current and current in parent_of and current not in seen and depth < 32:
            seen.add(current)
            depth += 1
            current = parent_of[current]
        out[event.event_id] = depth
    return out


def build_story(session: Session, rollout_id: str, events: list[TraceEvent]) -> list[Item]:
    repo = RolloutRepository(session)
    on_page_results = {cid: e for e in events if e.kind == "tool_result" and (cid := _call_id(e))}
    on_page_calls = {cid: e for e in events if e.kind == "tool_call" and (cid := _call_id(e))}
    missing_results = [cid for cid in on_page_calls if cid not in on_page_results]
    later_results = {_call_id(e): e for e in repo.events_by_call_ids(rollout_id, "tool_result", missing_results)}
    orphan_results = [cid for cid in on_page_results if cid not in on_page_calls]
    earlier_calls = {_call_id(e) for e in repo.events_by_call_ids(rollout_id, "tool_call", orphan_results)
                     if events and (e.seq, e.pk) < (events[0].seq, events[0].pk)}
    depth = depths(session, rollout_id, events)
    items: list[Item] = []
    for event in events:
        cid = _call_id(event)
        if event.kind == "tool_result" and cid and (cid in on_page_calls or cid in earlier_calls):
            continue  # shown beside its call
        item = Item(kind=event.kind, event=event, depth=depth.get(event.event_id, 0), payload=_payload(event))
        if event.kind == "tool_call" and cid:
            item.result = on_page_results.get(cid) or later_results.get(cid)
            item.result_payload = _payload(item.result)
        items.append(item)
    return items


# -- Gantt ------------------------------------------------------------------------------------------------

ROW = 22
LABEL_W = 280
CHART_W = 820


@dataclass
class Bar:
    label: str
    kind: str
    depth: int
    start: datetime
    end: datetime | None
    event_id: str
    is_error: bool
    detail: str


def gantt_bars(session: Session, rollout_id: str, events: list[TraceEvent]) -> list[Bar]:
    """Timed events as bars, children under their parents (depth-first, by start time)."""
    items = build_story(session, rollout_id, events)
    bars: list[Bar] = []
    for item in items:
        event = item.event
        if event.started_at is None:
            continue
        end = event.ended_at
        if item.result is not None:
            end = item.result.ended_at or item.result.started_at or end
        name = event.name or item.payload.get("model") or item.payload.get("role") or ""
        label = f"{event.kind} {name}".strip()
        detail_parts = [label]
        if item.duration_ms is not None:
            detail_parts.append(f"{item.duration_ms:.0f} ms")
        if item.tokens:
            detail_parts.append(f"{item.tokens} tokens")
        bars.append(Bar(label=label, kind=event.kind, depth=item.depth, start=event.started_at, end=end,
                        event_id=event.event_id, is_error=item.is_error, detail=" · ".join(detail_parts)))
    # Depth-first order: each child right under its parent, siblings by start time.
    by_id = {b.event_id: b for b in bars}
    parent = {e.event_id: e.parent_id for e in events}
    children: dict[str | None, list[Bar]] = {}
    for bar in bars:
        p = parent.get(bar.event_id)
        children.setdefault(p if p in by_id else None, []).append(bar)
    ordered: list[Bar] = []

    def walk(key: str | None) -> None:
        for bar in sorted(children.get(key, []), key=lambda b: b.start):
            ordered.append(bar)
            walk(bar.event_id)

    walk(None)
    return ordered


def gantt_svg(bars: list[Bar], origin: datetime | None, event_url: str) -> Markup:
    """`event_url` is the page of one event, with {id} where the event id goes."""
    if not bars:
        return Markup('<p class="muted">No timed events on this page (events need started_at).</p>')
    t0 = origin or min(b.start for b in bars)
    t0 = min(t0, min(b.start for b in bars))
    t1 = max((b.end or b.start) for b in bars)
    total_ms = max(1.0, (t1 - t0).total_seconds() * 1000)
    height = ROW * len(bars) + 30
    width = LABEL_W + CHART_W + 10

    def x(when: datetime) -> float:
        return LABEL_W + ((when - t0).total_seconds() * 1000 / total_ms) * CHART_W

    parts = [f'<svg class="gantt" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
             'aria-label="Gantt chart of the trace">']
    for i in range(6):
        tx = LABEL_W + CHART_W * i / 5
        parts.append(f'<line class="tick" x1="{tx:.1f}" y1="16" x2="{tx:.1f}" y2="{height}"/>'
                     f'<text class="lbl" x="{tx:.1f}" y="12" text-anchor="middle">{total_ms * i / 5:.0f} ms</text>')
    for row, bar in enumerate(bars):
        y = 22 + row * ROW
        x0 = x(bar.start)
        x1 = x(bar.end) if bar.end else x0
        label = html.escape(bar.label if len(bar.label) <= 38 else bar.label[:37] + "…")
        indent = 6 + bar.depth * 12
        css = f"g-{bar.kind}" + (" g-error" if bar.is_error else "")
        href = html.escape(event_url.replace("{id}", quote(bar.event_id, safe="")))
        parts.append(f'<a href="{href}"><g class="grow {css}">')
        parts.append(f'<text class="glabel" x="{indent}" y="{y + 14}">{label}</text>')
        if x1 - x0 >= 1.5:
            parts.append(f'<rect class="gbar" x="{x0:.1f}" y="{y + 3}" width="{x1 - x0:.1f}" '
                         f'height="{ROW - 6}" rx="3"/>')
        else:
            parts.append(f'<circle class="gbar" cx="{x0:.1f}" cy="{y + ROW / 2 - 1:.1f}" r="4"/>')
        parts.append(f'<title>{html.escape(bar.detail)}</title></g></a>')
    parts.append("</svg>")
    return Markup("".join(parts))
