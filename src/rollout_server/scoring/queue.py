"""Putting scoring work on the queue. Jobs are rows written in the caller's transaction: a worker sees them
once that transaction commits, and never for a rollout whose finish was rolled back."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from ..db.types import utcnow
from ..ids import new_id
from ..models import Job, Rollout, Run
from ..models.rollout import FINAL_STATUSES
from .repository import ScorerRepository


def _job_row(rollout: Any, payload: dict[str, Any], max_attempts: int) -> dict[str, Any]:
    now = utcnow()
    return {"id": new_id("job"), "workspace_id": rollout.workspace_id, "kind": "score", "run_id": rollout.run_id,
            "rollout_id": rollout.id, "payload": payload, "status": "queued", "attempts": 0,
            "max_attempts": max_attempts, "run_after": now, "created_at": now}


def enqueue_after_finish(session: Session, rollout: Rollout, max_attempts: int = 3) -> bool:
    """Called when a rollout finishes: one job running the run's configured scorers, if it has any."""
    run = session.get(Run, rollout.run_id)
    if run is None or not ScorerRepository(session).any_enabled(run.id, run.dataset_id):
        return False
    session.execute(insert(Job), [_job_row(rollout, {"scorers": None, "inline": []}, max_attempts)])
    return True


def enqueue_for_run(session: Session, run: Run, *, names: Sequence[str] | None, inline: list[dict[str, Any]],
                    statuses: Sequence[str] = FINAL_STATUSES, rollout_ids: Sequence[str] | None = None,
                    max_attempts: int = 3) -> int:
    """One job per finished rollout of the run (optionally only some rollouts); returns how many."""
    query = select(Rollout.id, Rollout.workspace_id, Rollout.run_id).where(
        Rollout.run_id == run.id, Rollout.status.in_(list(statuses))
    )
    if rollout_ids is not None:
        query = query.where(Rollout.id.in_(list(rollout_ids)))
    payload = {"scorers": list(names) if names is not None else None, "inline": inline}
    count = 0
    batch: list[dict[str, Any]] = []
    for row in session.execute(query.order_by(Rollout.attempt)):
        batch.append(_job_row(row, payload, max_attempts))
        if len(batch) == 1000:
            session.execute(insert(Job), batch)
            count += len(batch)
            batch = []
    if batch:
        session.execute(insert(Job), batch)
        count += len(batch)
    return count
