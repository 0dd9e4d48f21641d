"""Business rules for scoring: configuring scorers, scoring a past run on demand, progress and errors,
advantages and discards, metrics. Never commits: the API's session (or the worker's block) does."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ..common.pagination import decode_cursor, encode_cursor
from ..common.schemas import Page
from ..datasets.service import resolve_dataset
from ..db.types import utcnow
from ..errors import InvalidInput, NotFound
from ..ids import new_id
from ..models import Rollout, Run, Score, ScorerConfig
from ..rollouts.service import get_rollout
from ..runs.service import resolve_run
from . import advantages, metrics
from .base import ScorerConfigError
from .queue import enqueue_for_run
from .registry import available_types, build_scorer
from .repository import JobRepository, ScorerRepository, ScoreWriteRepository
from .schemas import (
    AdvantagesRequest,
    AdvantagesResult,
    DiscardIn,
    DiscardOut,
    InlineScorer,
    RunMetrics,
    ScorerErrorOut,
    ScorerIn,
    ScorerOut,
    ScorerTypeOut,
    ScoreRunRequest,
    ScoreRunResult,
    ScoringStatus,
)


def validate_scorer(name: str, type_: str, config: dict[str, object], field: str) -> None:
    """Build the scorer once so a bad configuration is a 422 now, not an error on every rollout later."""
    try:
        build_scorer(name, type_, dict(config))
    except ScorerConfigError as error:
        where = "type" if error.field == "type" else f"config.{error.field}" if error.field else "config"
        raise InvalidInput(f"Scorer '{name}': {error}", field=f"{field}{where}") from error


def scorer_out(config: ScorerConfig) -> ScorerOut:
    return ScorerOut.model_validate(config)


def list_types() -> list[ScorerTypeOut]:
    return [ScorerTypeOut(type=t, source=s) for t, s in available_types()]


def put_scorer(session: Session, workspace_id: str, body: ScorerIn) -> tuple[ScorerConfig, bool]:
    """Create the scorer, or replace the one of that name on the same dataset or run. Returns (config, created)."""
    dataset_id = resolve_dataset(session, workspace_id, body.dataset).id if body.dataset else None
    run_id = resolve_run(session, workspace_id, body.run).id if body.run else None
    validate_scorer(body.name, body.type, body.config, "")
    repo = ScorerRepository(session)
    existing = repo.find(workspace_id, dataset_id=dataset_id, run_id=run_id, name=body.name)
    now = utcnow()
    if existing is not None:
        existing.type, existing.config, existing.enabled = body.type, body.config, body.enabled
        existing.updated_at = now
        session.flush()
        return existing, False
    return repo.add(ScorerConfig(id=new_id("scorer"), workspace_id=workspace_id, dataset_id=dataset_id, run_id=run_id,
                                 name=body.name, type=body.type, config=body.config, enabled=body.enabled,
                                 created_at=now, updated_at=now)), True


def get_scorer(session: Session, workspace_id: str, scorer_id: str) -> ScorerConfig:
    found = ScorerRepository(session).get(workspace_id, scorer_id)
    if found is None:
        raise NotFound(f"No scorer {scorer_id} in this workspace.")
    return found


def list_scorers(session: Session, workspace_id: str, *, dataset: str | None, run: str | None) -> list[ScorerConfig]:
    repo = ScorerRepository(session)
    if run is not None:
        found = resolve_run(session, workspace_id, run)
        if dataset is None:
            return repo.effective(found.id, found.dataset_id) + [
                c for c in repo.list_for(workspace_id, run_id=found.id) if not c.enabled]
        return repo.list_for(workspace_id, run_id=found.id)
    dataset_id = resolve_dataset(session, workspace_id, dataset).id if dataset else None
    return repo.list_for(workspace_id, dataset_id=dataset_id)


def delete_scorer(session: Session, workspace_id: str, scorer_id: str) -> None:
    ScorerRepository(session).delete(get_scorer(session, workspace_id, scorer_id))


# -- scoring a run ----------------------------------------------------------------------------------------

def scoring_status(session: Session, run: Run) -> ScoringStatus:
    counts = JobRepository(session).counts_for_run(run.id)
    errors = session.scalar(
        select(func.count()).select_from(Score).join(Rollout, Rollout.id == Score.rollout_id)
        .where(Rollout.run_id == run.id, Score.data_type == "error")
    ) or 0
    return ScoringStatus(run_id=run.id, run_number=run.number, total=sum(counts.values()), errors=int(errors),
                         **{k: counts.get(k, 0) for k in ("queued", "running", "done", "failed")})


def score_run(session: Session, workspace_id: str, run_ref: str, body: ScoreRunRequest,
              max_attempts: int) -> ScoreRunResult:
    run = resolve_run(session, workspace_id, run_ref)
    configured = {c.name for c in ScorerRepository(session).effective(run.id, run.dataset_id)}
    if body.scorers is not None:
        unknown = [n for n in body.scorers if n not in configured]
        if unknown:
            raise InvalidInput(f"Run {run.number} has no enabled scorer named {', '.join(map(repr, unknown))}; "
                               f"configured: {', '.join(sorted(configured)) or 'none'}. Pass ad-hoc ones as inline.",
                               field="scorers")
    for index, spec in enumerate(body.inline):
        validate_scorer(spec.name, spec.type, spec.config, f"inline.{index}.")
    names = body.scorers
    if names is None and not configured and not body.inline:
        raise InvalidInput(f"Run {run.number} has no scorers: configure some (POST /api/v1/scorers) or pass inline "
                           "ones.", field="scorers")
    inline: list[InlineScorer] = body.inline
    if names is None and body.inline:
        names = []  # only the ad-hoc scorers
    if body.rollouts is not None:
        found = set(session.scalars(select(Rollout.id).where(Rollout.id.in_(body.rollouts), Rollout.run_id == run.id)))
        missing = [r for r in body.rollouts if r not in found]
        if missing:
            raise InvalidInput(f"Rollout {missing[0]} is not in run {run.number}.", field="rollouts")
    count = enqueue_for_run(session, run, names=names, inline=[s.model_dump() for s in inline],
                            statuses=body.statuses, rollout_ids=body.rollouts, max_attempts=max_attempts)
    session.flush()
    status = scoring_status(session, run)
    return ScoreRunResult(**status.model_dump(), enqueued=count)


def scorer_errors(session: Session, workspace_id: str, run_ref: str, *, cursor: str | None,
                  limit: int) -> Page[ScorerErrorOut]:
    run = resolve_run(session, workspace_id, run_ref)
    after = decode_cursor(cursor, 2)
    rows = ScoreWriteRepository(session).errors_for_run(run.id, after=(after[0], after[1]) if after else None,
                                                        limit=limit + 1)
    items = [ScorerErrorOut(rollout_id=s.rollout_id, attempt=attempt, scorer=s.source, message=str(s.value),
                            detail=s.comment, created_at=s.created_at) for s, attempt in rows[:limit]]
    next_cursor = encode_cursor(rows[limit - 1][1], rows[limit - 1][0].id) if len(rows) > limit else None
    return Page(items=items, next_cursor=next_cursor)


# -- advantages, discards, metrics ------------------------------------------------------------------------

def compute_advantages(session: Session, workspace_id: str, run_ref: str, body: AdvantagesRequest) -> AdvantagesResult:
    run = resolve_run(session, workspace_id, run_ref)
    summary = advantages.compute_for_run(
        session, run, normalization=body.normalization, epsilon=body.epsilon, std_ddof=body.std_ddof,
        group_by=body.group_by, discard_zero_variance=body.discard_zero_variance,
        discard_statuses=body.discard_statuses, discard_unscored=body.discard_unscored,
    )
    return AdvantagesResult(run_id=run.id, run_number=run.number, normalization=body.normalization,
                            **summary.__dict__)


def discard(session: Session, workspace_id: str, rollout_id: str, body: DiscardIn) -> DiscardOut:
    rollout = get_rollout(session, workspace_id, rollout_id, for_update=True)
    rollout.discarded = body.discarded
    rollout.discard_reason = (body.reason or "discarded by hand") if body.discarded else None
    session.flush()
    return DiscardOut(id=rollout.id, discarded=rollout.discarded, discard_reason=rollout.discard_reason)


def run_metrics(session: Session, workspace_id: str, run_ref: str, *, include_discarded: bool) -> RunMetrics:
    run = resolve_run(session, workspace_id, run_ref)
    values = metrics.run_metrics(session, run, include_discarded=include_discarded)
    return RunMetrics(run_id=run.id, run_number=run.number, reward_score=run.reward_score,
                      scoring=scoring_status(session, run), **values)
