"""Queries for runs, their task lists and aggregates."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Select, func, or_, select, update
from sqlalchemy.orm import Session

from ..datasets.repository import visible_in
from ..models import Dataset, Rollout, Run, Task


class RunRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def get(self, workspace_id: str, run_id: str, *, for_update: bool = False) -> Run | None:
        query = select(Run).where(Run.id == run_id, Run.workspace_id == workspace_id)
        return self.session.scalar(query.with_for_update() if for_update else query)

    def get_by_number(self, workspace_id: str, number: int, *, for_update: bool = False) -> Run | None:
        query = select(Run).where(Run.number == number, Run.workspace_id == workspace_id)
        return self.session.scalar(query.with_for_update() if for_update else query)

    def get_many(self, workspace_id: str, run_ids: Sequence[str]) -> dict[str, Run]:
        ids = [r for r in set(run_ids) if r]
        if not ids:
            return {}
        return {run.id: run for run in self.session.scalars(
            select(Run).where(Run.id.in_(ids), Run.workspace_id == workspace_id))}

    def get_by_client_key(self, workspace_id: str, client_key: str) -> Run | None:
        return self.session.scalar(select(Run).where(Run.workspace_id == workspace_id, Run.client_key == client_key))

    def add(self, run: Run) -> Run:
        self.session.add(run)
        self.session.flush()
        return run

    def take_attempt_number(self, run_id: str) -> int:
        number = self.session.scalar(
            update(Run).where(Run.id == run_id).values(next_attempt=Run.next_attempt + 1).returning(Run.next_attempt)
        )
        assert number is not None
        return number - 1

    def list_page(self, workspace_id: str, *, filters: dict[str, Any], before: tuple[datetime, str] | None,
                  limit: int) -> list[Run]:
        query = select(Run).where(Run.workspace_id == workspace_id)
        for column in ("status", "workflow_name", "group_id", "agent_name", "model", "dataset_id"):
            if filters.get(column) is not None:
                query = query.where(getattr(Run, column) == filters[column])
        ordered = query.order_by(Run.created_at.desc(), Run.id.desc())
        tag = filters.get("tag")
        if not tag:
            return list(self.session.scalars(self._before(ordered, before).limit(limit)))
        # Tags are a JSON list; filtering in Python keeps one query shape for both dialects. Read on
        # until the page is full, so a tag that is rare among recent runs still pages correctly.
        found: list[Run] = []
        while len(found) < limit:
            chunk = list(self.session.scalars(self._before(ordered, before).limit(limit * 4)))
            found += [r for r in chunk if tag in (r.tags or [])]
            if len(chunk) < limit * 4:
                break
            before = (chunk[-1].created_at, chunk[-1].id)
        return found[:limit]

    @staticmethod
    def _before(query: Any, before: tuple[datetime, str] | None) -> Any:
        if before is None:
            return query
        return query.where((Run.created_at < before[0]) | ((Run.created_at == before[0]) & (Run.id < before[1])))

    def distinct_values(self, workspace_id: str, column: str, limit: int = 200) -> list[str]:
        """Values of a run field in use (workflow names, agents, models), for filter pickers."""
        attribute = {"workflow_name": Run.workflow_name, "agent_name": Run.agent_name, "model": Run.model,
                     "group_id": Run.group_id}[column]
        return list(self.session.scalars(
            select(attribute).where(Run.workspace_id == workspace_id, attribute.is_not(None))
            .group_by(attribute).order_by(attribute).limit(limit)
        ))

    def dataset_names(self, dataset_ids: Sequence[str]) -> dict[str, str]:
        ids = [d for d in set(dataset_ids) if d]
        if not ids:
            return {}
        return dict(self.session.execute(select(Dataset.id, Dataset.name).where(Dataset.id.in_(ids))).all())

    def numbers_of(self, run_ids: Sequence[str]) -> dict[str, int]:
        ids = [r for r in set(run_ids) if r]
        if not ids:
            return {}
        return dict(self.session.execute(select(Run.id, Run.number).where(Run.id.in_(ids))).all())

    def task_query(self, run: Run) -> Select[Any]:
        """The distinct tasks of a run's list (before repeats), by key."""
        query = select(Task).where(Task.dataset_id == run.dataset_id, visible_in(run.dataset_version or 0))
        if run.rerun_of_id:
            failed_keys = (
                select(Task.key)
                .join(Rollout, Rollout.task_id == Task.id)
                .where(Rollout.run_id == run.rerun_of_id, self._failing(run))
            )
            query = query.where(Task.key.in_(failed_keys))
        return query

    @staticmethod
    def _failing(run: Run) -> Any:
        """Source-run rollouts that count as failing: a listed status, or a reward below the threshold."""
        failing: Any = Rollout.status.in_(run.rerun_statuses or [])
        if run.rerun_reward_below is not None:
            failing = or_(failing, Rollout.reward < run.rerun_reward_below)
        return failing

    def count_tasks(self, run: Run) -> int:
        if run.dataset_id is None:
            return 0
        return int(self.session.scalar(select(func.count()).select_from(self.task_query(run).subquery())) or 0)

    def tasks_page(self, run: Run, *, from_key: str | None, limit: int) -> list[Task]:
        if run.dataset_id is None:
            return []
        query = self.task_query(run)
        if from_key is not None:
            query = query.where(Task.key >= from_key)
        return list(self.session.scalars(query.order_by(Task.key).limit(limit)))

    def count_tasks_before(self, run: Run, key: str) -> int:
        query = self.task_query(run).where(Task.key < key)
        return int(self.session.scalar(select(func.count()).select_from(query.subquery())) or 0)

    def status_counts(self, run_id: str) -> dict[str, int]:
        rows = self.session.execute(
            select(Rollout.status, func.count()).where(Rollout.run_id == run_id).group_by(Rollout.status)
        )
        return {status: int(count) for status, count in rows}

    def totals(self, run_id: str) -> dict[str, Any]:
        row = self.session.execute(
            select(
                func.avg(Rollout.reward),
                func.count(Rollout.reward),
                func.coalesce(func.sum(Rollout.input_tokens), 0),
                func.coalesce(func.sum(Rollout.output_tokens), 0),
                func.coalesce(func.sum(Rollout.cost), 0.0),
            ).where(Rollout.run_id == run_id)
        ).one()
        return {"mean_reward": row[0], "scored_count": int(row[1]), "input_tokens": int(row[2]),
                "output_tokens": int(row[3]), "cost": float(row[4])}

    def latencies(self, run_id: str) -> list[float]:
        return list(
            self.session.scalars(
                select(Rollout.latency_ms).where(Rollout.run_id == run_id, Rollout.latency_ms.is_not(None))
                .order_by(Rollout.latency_ms)
            )
        )

    def promotable_rollouts(self, run_id: str, statuses: Sequence[str], reward_below: float | None) -> list[Rollout]:
        """A run's rollouts with one of `statuses` or a reward below the threshold, by attempt."""
        chosen: Any = Rollout.status.in_(list(statuses))
        if reward_below is not None:
            chosen = or_(chosen, Rollout.reward < reward_below)
        return list(self.session.scalars(
            select(Rollout).where(Rollout.run_id == run_id, chosen).order_by(Rollout.attempt)
        ))
