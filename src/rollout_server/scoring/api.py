"""REST routes for scorers, on-demand scoring, scorer errors, advantages, discards and run metrics."""

from __future__ import annotations

from fastapi import Query, Response

from ..api.deps import Ctx, CurrentCaller, ReadSession, WriteSession
from ..api.routing import api_router
from ..common.pagination import DEFAULT_LIMIT, MAX_LIMIT
from ..common.schemas import Page
from . import service
from .schemas import (
    AdvantagesRequest,
    AdvantagesResult,
    DiscardIn,
    DiscardOut,
    RunMetrics,
    ScorerErrorOut,
    ScorerIn,
    ScorerOut,
    ScorerTypeOut,
    ScoreRunRequest,
    ScoreRunResult,
    ScoringStatus,
)

router = api_router(tags=["scoring"])


@router.get("/scorers/types", response_model=list[ScorerTypeOut])
def list_scorer_types(caller: CurrentCaller) -> list[ScorerTypeOut]:
    """Scorer types this server can run: built-ins and installed `rollout.scorers` entry points."""
    return service.list_types()


@router.post("/scorers", response_model=ScorerOut, status_code=201,
             responses={200: {"model": ScorerOut, "description": "An existing scorer of that name was replaced."}})
def put_scorer(body: ScorerIn, caller: CurrentCaller, session: WriteSession, response: Response) -> ScorerOut:
    """Attach a scorer to a dataset or a run; it scores their rollouts when they finish."""
    config, created = service.put_scorer(session, caller.workspace_id, body)
    if not created:
        response.status_code = 200
    return service.scorer_out(config)


@router.get("/scorers", response_model=Page[ScorerOut])
def list_scorers(caller: CurrentCaller, session: ReadSession,
                 dataset: str | None = Query(None, description="Dataset name or ID."),
                 run: str | None = Query(None, description="Run ID or number: the scorers that apply to it.")
                 ) -> Page[ScorerOut]:
    """Scorers of a dataset, of a run (its own and its dataset's), or of the whole workspace."""
    found = service.list_scorers(session, caller.workspace_id, dataset=dataset, run=run)
    return Page(items=[service.scorer_out(c) for c in found])


@router.get("/scorers/{scorer_id}", response_model=ScorerOut)
def get_scorer(scorer_id: str, caller: CurrentCaller, session: ReadSession) -> ScorerOut:
    """One scorer configuration."""
    return service.scorer_out(service.get_scorer(session, caller.workspace_id, scorer_id))


@router.delete("/scorers/{scorer_id}", status_code=204)
def delete_scorer(scorer_id: str, caller: CurrentCaller, session: WriteSession) -> Response:
    """Remove a scorer; the scores it wrote stay."""
    service.delete_scorer(session, caller.workspace_id, scorer_id)
    return Response(status_code=204)


@router.post("/runs/{run}/score", response_model=ScoreRunResult, status_code=202)
def score_run(run: str, body: ScoreRunRequest, caller: CurrentCaller, session: WriteSession,
              ctx: Ctx) -> ScoreRunResult:
    """Queue scoring of a past run's finished rollouts; follow progress at GET …/scoring."""
    return service.score_run(session, caller.workspace_id, run, body, ctx.settings.scoring_max_attempts)


@router.get("/runs/{run}/scoring", response_model=ScoringStatus)
def scoring_status(run: str, caller: CurrentCaller, session: ReadSession) -> ScoringStatus:
    """Scoring jobs of a run by status, and how many scorer errors its rollouts carry."""
    from ..runs.service import resolve_run

    return service.scoring_status(session, resolve_run(session, caller.workspace_id, run))


@router.get("/runs/{run}/scorer-errors", response_model=Page[ScorerErrorOut])
def list_scorer_errors(run: str, caller: CurrentCaller, session: ReadSession, cursor: str | None = None,
                       limit: int = Query(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT)) -> Page[ScorerErrorOut]:
    """Scorers that failed on the run's rollouts (their error is also a score with data_type `error`)."""
    return service.scorer_errors(session, caller.workspace_id, run, cursor=cursor, limit=limit)


@router.post("/runs/{run}/advantages", response_model=AdvantagesResult)
def compute_advantages(run: str, body: AdvantagesRequest, caller: CurrentCaller,
                       session: WriteSession) -> AdvantagesResult:
    """Compute GRPO-style advantages per group and mark zero-variance groups and errored rollouts discarded."""
    return service.compute_advantages(session, caller.workspace_id, run, body)


@router.get("/runs/{run}/metrics", response_model=RunMetrics)
def run_metrics(run: str, caller: CurrentCaller, session: ReadSession,
                include_discarded: bool = True) -> RunMetrics:
    """Mean, std, min, max and count of every numeric score, the reward and the advantage of a run."""
    return service.run_metrics(session, caller.workspace_id, run, include_discarded=include_discarded)


@router.post("/rollouts/{rollout_id}/discard", response_model=DiscardOut)
def discard_rollout(rollout_id: str, body: DiscardIn, caller: CurrentCaller, session: WriteSession) -> DiscardOut:
    """Mark a rollout discarded (excluded from exports by default) with a reason, or take the mark back."""
    return service.discard(session, caller.workspace_id, rollout_id, body)
