"""Running one scoring job: read the rollout, call its scorers outside any transaction, then write their scores
(or their errors) in one transaction that first checks the worker still owns the job."""

from __future__ import annotations

import math
import traceback
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..context import AppContext
from ..db.types import utcnow
from ..ids import new_id
from ..models import Job, Rollout, Run, Score, ScorerConfig, Task, TraceEvent
from ..rollouts import service as rollouts
from ..rollouts.schemas import ScoreIn
from .base import ScoreResult, ScoringInput
from .registry import build_scorer
from .repository import JobRepository, ScorerRepository, ScoreWriteRepository


@dataclass
class ScorerSpec:
    name: str
    type: str
    config: dict[str, Any]
    inline: bool = False

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.type, "config": self.config}


def task_json(task: Task | None) -> dict[str, Any] | None:
    if task is None:
        return None
    return {"id": task.id, "key": task.key, "instruction": task.instruction, "input": task.input,
            "expected_output": task.expected_output, "output_schema": task.output_schema,
            "metadata": task.metadata_, "split": task.split}


def scoring_input(session: Session, ctx: AppContext, rollout: Rollout, run: Run) -> ScoringInput:
    task = session.get(Task, rollout.task_id) if rollout.task_id else None
    events = [
        rollouts.event_out(e, ctx.store, rollout.workspace_id).model_dump(mode="json", exclude_none=True)
        for e in session.scalars(select(TraceEvent).where(TraceEvent.rollout_id == rollout.id)
                                 .order_by(TraceEvent.seq, TraceEvent.pk))
    ]
    return ScoringInput(
        rollout={"id": rollout.id, "attempt": rollout.attempt, "status": rollout.status, "input": rollout.input,
                 "output": rollout.output, "error": rollout.error, "metadata": rollout.metadata_,
                 "repeat_index": rollout.repeat_index, "step": rollout.step, "group_key": rollout.group_key},
        task=task_json(task), events=events,
        run={"id": run.id, "number": run.number, "workflow_name": run.workflow_name, "model": run.model,
             "reward_score": run.reward_score},
    )


def resolve_specs(session: Session, payload: dict[str, Any], run: Run) -> list[ScorerSpec]:
    """The job's scorers: the run's effective configured ones (optionally only some names) and inline ones."""
    specs: list[ScorerSpec] = []
    names = payload.get("scorers")
    if names is None or names:
        configured: list[ScorerConfig] = ScorerRepository(session).effective(run.id, run.dataset_id)
        specs += [ScorerSpec(c.name, c.type, dict(c.config or {})) for c in configured
                  if names is None or c.name in names]
    specs += [ScorerSpec(s["name"], s["type"], dict(s.get("config") or {}), inline=True)
              for s in payload.get("inline") or []]
    return specs


def _checked(results: list[ScoreResult]) -> list[ScoreIn]:
    checked = []
    for result in results:
        value = result.value
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"score {result.name!r} is {value}; scores must be finite numbers")
        checked.append(ScoreIn(name=result.name[:200], value=value, data_type=result.data_type,  # type: ignore[arg-type]
                               source="scorer", comment=result.comment))
    return checked


def run_scorers(specs: list[ScorerSpec], item: ScoringInput, timeout: float) -> tuple[dict[str, list[ScoreIn]],
                                                                                       dict[str, str]]:
    """Each scorer on its own: one that raises is recorded and never stops the others."""
    done: dict[str, list[ScoreIn]] = {}
    failed: dict[str, str] = {}
    for spec in specs:
        try:
            scorer = build_scorer(spec.name, spec.type, spec.config, timeout=timeout)
            done[spec.name] = _checked(scorer(item))
        except Exception as error:  # a scorer is user code: any failure is its own, reported on the rollout
            message = f"{error.__class__.__name__}: {error}".strip()
            if not str(error):
                message += " (" + traceback.format_exc(limit=2).strip().splitlines()[-1] + ")"
            failed[spec.name] = message[:2000]
    return done, failed


def process_score_job(ctx: AppContext, job_id: str, worker_id: str) -> str:
    """Score one rollout for a claimed job; returns the job's new status."""
    settings = ctx.settings
    with ctx.db.reading() as session:
        job = session.get(Job, job_id)
        rollout = session.get(Rollout, job.rollout_id) if job and job.rollout_id else None
        run = session.get(Run, rollout.run_id) if rollout else None
        if job is None or rollout is None or run is None:
            specs, item = [], None
        else:
            payload = dict(job.payload or {})
            specs = resolve_specs(session, payload, run)
            item = scoring_input(session, ctx, rollout, run) if specs else None
    done, failed = run_scorers(specs, item, settings.scorer_timeout_seconds) if item else ({}, {})

    with ctx.db.transaction() as session:
        owned = JobRepository(session).lock_owned(job_id, worker_id)
        if owned is None:
            return "lost"  # another worker took the job over after our lease ran out; its result counts
        rollout = session.scalar(select(Rollout).where(Rollout.id == owned.rollout_id).with_for_update()) \
            if owned.rollout_id else None
        if rollout is None:
            owned.status, owned.finished_at, owned.locked_until = "done", utcnow(), None
            return owned.status
        owned.max_attempts = settings.scoring_max_attempts  # the worker's setting decides, not the enqueuer's
        write_results(session, rollout, done, failed, owned)
        final = owned.attempts >= owned.max_attempts
        now = utcnow()
        owned.locked_until = None
        if failed and not final:
            owned.status = "queued"
            owned.run_after = now + timedelta(seconds=settings.scoring_retry_seconds * 2 ** (owned.attempts - 1))
            inline = [s.as_json() for s in specs if s.inline and s.name in failed]
            owned.payload = {"scorers": [s.name for s in specs if not s.inline and s.name in failed], "inline": inline}
        else:
            owned.status = "failed" if failed else "done"
            owned.finished_at = now
        owned.last_error = "; ".join(f"{name}: {message}" for name, message in failed.items())[:4000] or None
        owned.result = {"scored": sorted(done), "failed": sorted(failed)}
        return owned.status


def write_results(session: Session, rollout: Rollout, done: dict[str, list[ScoreIn]], failed: dict[str, str],
                  job: Job) -> None:
    """Replace each scorer's previous scores on the rollout with its new ones, or with an error score."""
    scores = ScoreWriteRepository(session)
    run = session.get(Run, rollout.run_id)
    touched: set[str] = set()
    for source in [*done, *failed]:
        touched.update(session.scalars(select(Score.name).where(Score.rollout_id == rollout.id,
                                                                Score.source == source)))
        scores.delete_from_source(rollout.id, source)
    session.flush()
    for source, results in done.items():
        for result in results:
            touched.add(result.name)
            rollouts.add_score(session, rollout.workspace_id, rollout, result.model_copy(update={"source": source}))
    final = job.attempts >= job.max_attempts
    for source, message in failed.items():
        touched.add(source)
        note = f"attempt {job.attempts} of {job.max_attempts}" + ("; final" if final else "; will retry")
        scores.add(Score(id=new_id("score"), workspace_id=rollout.workspace_id, rollout_id=rollout.id, name=source,
                         data_type="error", value=message, numeric_value=None, source=source, comment=note))
    session.flush()
    if run is not None and run.reward_score in touched:
        rollout.reward = scores.latest_numeric(rollout.id, run.reward_score)
        session.flush()
