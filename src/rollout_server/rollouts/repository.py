"""Queries for rollouts, trace events and scores."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..db.upsert import insert_ignoring_conflicts
from ..models import Rollout, Run, Score, Task, TraceEvent


class RolloutRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def get(self, workspace_id: str, rollout_id: str, *, for_update: bool = False) -> Rollout | None:
        query = select(Rollout).where(Rollout.id == rollout_id, Rollout.workspace_id == workspace_id)
        return self.session.scalar(query.with_for_update() if for_update else query)

    def get_by_attempt(self, workspace_id: str, run_id: str, attempt: int) -> Rollout | None:
        return self.session.scalar(
            select(Rollout).where(Rollout.run_id == run_id, Rollout.attempt == attempt,
                                  Rollout.workspace_id == workspace_id)
        )

    def lock_many(self, workspace_id: str, rollout_ids: Sequence[str]) -> dict[str, Rollout]:
        """Lock rollouts in ID order so concurrent batches never deadlock."""
        rows = self.session.scalars(
            select(Rollout)
            .where(Rollout.id.in_(sorted(set(rollout_ids))), Rollout.workspace_id == workspace_id)
            .order_by(Rollout.id)
            .with_for_update()
        )
        return {r.id: r for r in rows}

    def add(self, rollout: Rollout) -> Rollout:
        self.session.add(rollout)
        self.session.flush()
        return rollout

    def context_of(self, rollouts: Sequence[Rollout]) -> tuple[dict[str, Run], dict[str, str]]:
        """The runs and task keys a list of rollouts needs for its wire form, in two queries."""
        run_ids = {r.run_id for r in rollouts}
        task_ids = {r.task_id for r in rollouts if r.task_id}
        runs = {run.id: run for run in self.session.scalars(select(Run).where(Run.id.in_(run_ids)))} if run_ids else {}
        keys = dict(self.session.execute(select(Task.id, Task.key).where(Task.id.in_(task_ids))).all()) \
            if task_ids else {}
        return runs, keys

    def list_page(self, workspace_id: str, *, filters: dict[str, Any], before: tuple[datetime, str] | None,
                  limit: int) -> list[Rollout]:
        query = select(Rollout).where(Rollout.workspace_id == workspace_id)
        if filters.get("workflow_name") is not None or filters.get("group_id") is not None:
            query = query.join(Run, Run.id == Rollout.run_id)
            if filters.get("workflow_name") is not None:
                query = query.where(Run.workflow_name == filters["workflow_name"])
            if filters.get("group_id") is not None:
                query = query.where(Run.group_id == filters["group_id"])
        for column in ("run_id", "task_id", "status", "step", "group_key"):
            if filters.get(column) is not None:
                query = query.where(getattr(Rollout, column) == filters[column])
        if filters.get("started_after") is not None:
            query = query.where(Rollout.started_at >= filters["started_after"])
        if filters.get("started_before") is not None:
            query = query.where(Rollout.started_at < filters["started_before"])
        if filters.get("reward_min") is not None:
            query = query.where(Rollout.reward >= filters["reward_min"])
        if filters.get("reward_max") is not None:
            query = query.where(Rollout.reward <= filters["reward_max"])
        if before is not None:
            query = query.where(
                (Rollout.started_at < before[0]) | ((Rollout.started_at == before[0]) & (Rollout.id < before[1]))
            )
        return list(self.session.scalars(query.order_by(Rollout.started_at.desc(), Rollout.id.desc()).limit(limit)))

    # -- events -------------------------------------------------------------------------------------------

    def insert_events(self, rows: list[dict[str, Any]]) -> set[tuple[str, str]]:
        """Insert events, skipping (rollout, event id) pairs already stored; returns the pairs inserted."""
        created: set[tuple[str, str]] = set()
        statement = insert_ignoring_conflicts(self.session, TraceEvent.__table__, ["rollout_id", "event_id"])  # type: ignore[arg-type]
        for start in range(0, len(rows), 1000):
            chunk = rows[start : start + 1000]
            result = self.session.execute(
                statement.values(chunk).returning(TraceEvent.rollout_id, TraceEvent.event_id)
            )
            created.update((rid, eid) for rid, eid in result)
        return created

    def events_page(self, rollout_id: str, *, after: tuple[int, int] | None, limit: int) -> list[TraceEvent]:
        query = select(TraceEvent).where(TraceEvent.rollout_id == rollout_id)
        if after is not None:
            query = query.where(
                (TraceEvent.seq > after[0]) | ((TraceEvent.seq == after[0]) & (TraceEvent.pk > after[1]))
            )
        return list(self.session.scalars(query.order_by(TraceEvent.seq, TraceEvent.pk).limit(limit)))

    # -- scores -------------------------------------------------------------------------------------------

    def add_score(self, score: Score) -> Score:
        self.session.add(score)
        self.session.flush()
        return score

    def scores_of(self, rollout_ids: Sequence[str]) -> dict[str, list[Score]]:
        found: dict[str, list[Score]] = {rid: [] for rid in rollout_ids}
        if rollout_ids:
            for score in self.session.scalars(
                select(Score).where(Score.rollout_id.in_(list(rollout_ids))).order_by(Score.created_at, Score.id)
            ):
                found[score.rollout_id].append(score)
        return found
