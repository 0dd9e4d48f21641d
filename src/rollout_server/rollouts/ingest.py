"""Writing trace events: idempotent by client event id, ordered by seq, counters kept on the rollout.

One call stores events for any number of rollouts in the caller's transaction. Rollouts are locked in
ID order, events are inserted in one multi-row statement that skips already-stored ids, and only the
events actually inserted move the rollout's counters (tokens, cost, event count).
"""

from __future__ import annotations

import io
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy.orm import Session

from ..db.types import utcnow
from ..models import Rollout
from ..storage import BlobStore
from ..storage.base import ingest_file
from .repository import RolloutRepository
from .schemas import EventIn

# Per-item answers stay plain dicts on this path; the API encodes them as they are (rollouts/api.py `_answer`).
ItemDict = dict[str, Any]

_COMMON = {"id", "kind", "seq", "parent_id", "name", "started_at", "ended_at", "metadata", "rollout_id"}


@dataclass
class EventOutcome:
    results: list[ItemDict]
    created: int
    duplicates: int
    rejected: int


def _usage_numbers(body: dict[str, Any]) -> tuple[int, int, float]:
    usage = body.get("usage") or {}
    if not isinstance(usage, dict):
        return 0, 0, 0.0

    def number(*names: str) -> int:
        for name in names:
            value = usage.get(name)
            if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
                return int(value)
        return 0

    cost = body.get("cost")
    cost_value = float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else 0.0
    return number("input_tokens", "prompt_tokens"), number("output_tokens", "completion_tokens"), cost_value


class EventWriter:
    def __init__(self, session: Session, store: BlobStore, workspace_id: str, inline_limit: int) -> None:
        self.session = session
        self.store = store
        self.workspace_id = workspace_id
        self.inline_limit = inline_limit
        self.repo = RolloutRepository(session)

    def _payload(self, event: EventIn) -> tuple[dict[str, Any] | None, orjson.Fragment | None, str | None]:
        """The event's body (what is not a common field), encoded once: the row carries the encoded JSON
        (inline), or a stub whose blob holds it (too large to keep in the row)."""
        body = event.__pydantic_extra__
        if not body:
            return None, None, None
        if "rollout_id" in body:  # sent inside a single-rollout batch, where it is not a field
            body = {k: v for k, v in body.items() if k != "rollout_id"}
            if not body:
                return None, None, None
        encoded = orjson.dumps(body)
        if len(encoded) <= self.inline_limit:
            return body, orjson.Fragment(encoded), None
        blob = ingest_file(self.store, self.workspace_id, io.BytesIO(encoded))
        return body, orjson.Fragment(orjson.dumps({"_blob": True, "size": blob.size})), blob.sha256

    def write(self, items: list[tuple[str, EventIn]], *, locked: dict[str, Rollout] | None = None) -> EventOutcome:
        """Store (rollout_id, event) pairs; items for unknown or finished rollouts are rejected one by one.
        `locked`: the rollouts, when the caller has locked them already (else they are locked here)."""
        results: list[ItemDict | None] = [None] * len(items)
        if locked is not None:
            rollouts = locked
        else:
            rollouts = self.repo.lock_many(self.workspace_id, [rid for rid, _ in items]) if items else {}
        seen: set[tuple[str, str]] = set()
        per_rollout: dict[str, list[int]] = defaultdict(list)
        for index, (rollout_id, event) in enumerate(items):
            rollout = rollouts.get(rollout_id)
            error = None
            if rollout is None:
                error = f"no rollout {rollout_id} in this workspace"
            elif rollout.status != "running":
                error = f"rollout {rollout_id} is already {rollout.status}; events cannot be added after finish"
            if error:
                results[index] = {"index": index, "id": event.id, "status": "rejected", "error": error}
                continue
            key = (rollout_id, event.id)
            if key in seen:
                results[index] = {"index": index, "id": event.id, "status": "duplicate", "error": None}
                continue
            seen.add(key)
            per_rollout[rollout_id].append(index)

        rows: list[dict[str, Any]] = []
        usage: list[tuple[str, str, dict[str, Any]]] = []  # llm_call bodies, for the token and cost counters
        now = utcnow()
        for rollout_id, indexes in per_rollout.items():
            next_seq = rollouts[rollout_id].last_seq
            for index in indexes:
                event = items[index][1]
                seq = event.seq
                if seq is None:
                    next_seq += 1
                    seq = next_seq
                elif seq > next_seq:
                    next_seq = seq
                body, payload, blob = self._payload(event)
                if event.kind == "llm_call" and body:
                    usage.append((rollout_id, event.id, body))
                started, ended = event.started_at, event.ended_at
                rows.append({
                    "rollout_id": rollout_id, "event_id": event.id, "seq": seq, "kind": event.kind,
                    "parent_id": event.parent_id, "name": event.name, "started_at": started, "ended_at": ended,
                    "duration_ms": (ended - started).total_seconds() * 1000.0 if started and ended else None,
                    "payload": payload, "payload_blob": blob, "metadata": event.metadata, "created_at": now,
                })
        # The rollouts are locked, so ids found stored now stay the only duplicates until commit.
        # One statement skips the stored (rollout, event id) pairs and says which rows went in.
        created = self.repo.insert_new_events(rows)

        totals: dict[str, list[Any]] = {}
        for row in rows:
            if (row["rollout_id"], row["event_id"]) in created:
                total = totals.setdefault(row["rollout_id"], [0, 0, 0, 0, 0.0])
                total[0] += 1
                total[1] = max(total[1], row["seq"])
        for rollout_id, event_id, body in usage:
            if (rollout_id, event_id) in created:
                tokens_in, tokens_out, cost = _usage_numbers(body)
                total = totals[rollout_id]
                total[2] += tokens_in
                total[3] += tokens_out
                total[4] += cost
        for rollout_id, (count, last_seq, tokens_in, tokens_out, cost) in totals.items():
            # The rows are locked; the unit of work writes the changed counters on flush.
            rollout = rollouts[rollout_id]
            rollout.event_count += count
            rollout.last_seq = max(rollout.last_seq, last_seq)
            rollout.input_tokens += tokens_in
            rollout.output_tokens += tokens_out
            rollout.cost += cost
        self.session.flush()

        counts = {"created": 0, "duplicate": 0, "rejected": 0}
        for rollout_id, indexes in per_rollout.items():
            for index in indexes:
                event_id = items[index][1].id
                status = "created" if (rollout_id, event_id) in created else "duplicate"
                results[index] = {"index": index, "id": event_id, "status": status, "error": None}
        final = [r for r in results if r is not None]
        for r in final:
            counts[r["status"]] += 1
        return EventOutcome(results=final, created=counts["created"], duplicates=counts["duplicate"],
                            rejected=counts["rejected"])
