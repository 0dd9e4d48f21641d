"""Queries for scorer configurations, the job queue, and the scores scorers write."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, exists, func, or_, select, update
from sqlalchemy.orm import Session

from ..models import Job, Rollout, Score, ScorerConfig


class ScorerRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def get(self, workspace_id: str, scorer_id: str) -> ScorerConfig | None:
        return self.session.scalar(
            select(ScorerConfig).where(ScorerConfig.id == scorer_id, ScorerConfig.workspace_id == workspace_id)
        )

    def find(self, workspace_id: str, *, dataset_id: str | None, run_id: str | None, name: str) -> ScorerConfig | None:
        return self.session.scalar(
            select(ScorerConfig).where(
                ScorerConfig.workspace_id == workspace_id, ScorerConfig.name == name,
                ScorerConfig.dataset_id.is_(None) if dataset_id is None else ScorerConfig.dataset_id == dataset_id,
                ScorerConfig.run_id.is_(None) if run_id is None else ScorerConfig.run_id == run_id,
            )
        )

    def list_for(self, workspace_id: str, *, dataset_id: str | None = None,
                 run_id: str | None = None) -> list[ScorerConfig]:
        query = select(ScorerConfig).where(ScorerConfig.workspace_id == workspace_id)
        if dataset_id is not None:
            query = query.where(ScorerConfig.dataset_id == dataset_id)
        if run_id is not None:
            query = query.where(ScorerConfig.run_id == run_id)
        return list(self.session.scalars(query.order_by(ScorerConfig.name, ScorerConfig.id)))

    def effective(self, run_id: str, dataset_id: str | None) -> list[ScorerConfig]:
        """The enabled scorers of a run: its own, plus its dataset's that it does not override by name."""
        clauses = [ScorerConfig.run_id == run_id]
        if dataset_id is not None:
            clauses.append(ScorerConfig.dataset_id == dataset_id)
        rows = list(self.session.scalars(select(ScorerConfig).where(or_(*clauses), ScorerConfig.enabled.is_(True))))
        by_name: dict[str, ScorerConfig] = {}
        for row in sorted(rows, key=lambda r: (r.run_id is not None, r.name)):
            by_name[row.name] = row  # the run's own config comes last and wins
        return [by_name[name] for name in sorted(by_name)]

    def any_enabled(self, run_id: str, dataset_id: str | None) -> bool:
        clauses = [ScorerConfig.run_id == run_id]
        if dataset_id is not None:
            clauses.append(ScorerConfig.dataset_id == dataset_id)
        return bool(self.session.scalar(select(exists().where(or_(*clauses), ScorerConfig.enabled.is_(True)))))

    def add(self, config: ScorerConfig) -> ScorerConfig:
        self.session.add(config)
        self.session.flush()
        return config

    def delete(self, config: ScorerConfig) -> None:
        self.session.delete(config)
        self.session.flush()


class JobRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def add_many(self, jobs: Sequence[Job]) -> None:
        self.session.add_all(jobs)
        self.session.flush()

    def get(self, workspace_id: str, job_id: str) -> Job | None:
        return self.session.scalar(select(Job).where(Job.id == job_id, Job.workspace_id == workspace_id))

    def _due(self, now: datetime) -> Any:
        return or_(
            (Job.status == "queued") & (Job.run_after <= now),
            (Job.status == "running") & (Job.locked_until < now),
        )

    def any_due(self, now: datetime) -> bool:
        return self.session.scalar(select(Job.id).where(self._due(now)).limit(1)) is not None

    def claim(self, worker_id: str, limit: int, now: datetime, lease_seconds: float) -> list[Job]:
        """Due jobs for this worker: rows another worker has locked are skipped (PostgreSQL), and SQLite's write
        lock makes the select-then-update atomic there. A running job whose lease ran out counts as due."""
        ids = list(self.session.scalars(
            select(Job.id).where(self._due(now)).order_by(Job.run_after, Job.id).limit(limit)
            .with_for_update(skip_locked=True)
        ))
        if not ids:
            return []
        self.session.execute(
            update(Job).where(Job.id.in_(ids)).values(
                status="running", locked_by=worker_id, locked_until=now + timedelta(seconds=lease_seconds),
                attempts=Job.attempts + 1,
            )
        )
        jobs = list(self.session.scalars(select(Job).where(Job.id.in_(ids)).order_by(Job.run_after, Job.id)
                                         .execution_options(populate_existing=True)))
        return jobs

    def lock_owned(self, job_id: str, worker_id: str) -> Job | None:
        """The job, locked, if this worker still owns it (its lease was not taken over)."""
        job = self.session.scalar(select(Job).where(Job.id == job_id).with_for_update()
                                  .execution_options(populate_existing=True))
        if job is None or job.status != "running" or job.locked_by != worker_id:
            return None
        return job

    def counts_for_run(self, run_id: str) -> dict[str, int]:
        rows = self.session.execute(
            select(Job.status, func.count()).where(Job.run_id == run_id, Job.kind == "score").group_by(Job.status)
        )
        return {status: int(count) for status, count in rows}

    def pending_for_rollouts(self, rollout_ids: Sequence[str]) -> set[str]:
        if not rollout_ids:
            return set()
        return set(self.session.scalars(
            select(Job.rollout_id).where(Job.rollout_id.in_(list(rollout_ids)), Job.status.in_(("queued", "running")))
        ))


class ScoreWriteRepository:
    """The scores scorers own: replaced as a whole each time a scorer runs on a rollout."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def delete_from_source(self, rollout_id: str, source: str) -> None:
        self.session.execute(delete(Score).where(Score.rollout_id == rollout_id, Score.source == source))

    def add(self, score: Score) -> None:
        self.session.add(score)

    def latest_numeric(self, rollout_id: str, name: str) -> float | None:
        return self.session.scalar(
            select(Score.numeric_value).where(Score.rollout_id == rollout_id, Score.name == name,
                                              Score.numeric_value.is_not(None))
            .order_by(Score.created_at.desc(), Score.id.desc()).limit(1)
        )

    def errors_for_run(self, run_id: str, *, after: tuple[int, str] | None, limit: int) -> list[tuple[Score, int]]:
        query = (
            select(Score, Rollout.attempt).join(Rollout, Rollout.id == Score.rollout_id)
            .where(Rollout.run_id == run_id, Score.data_type == "error")
        )
        if after is not None:
            query = query.where((Rollout.attempt > after[0]) | ((Rollout.attempt == after[0]) & (Score.id > after[1])))
        return [(s, a) for s, a in self.session.execute(query.order_by(Rollout.attempt, Score.id).limit(limit))]
