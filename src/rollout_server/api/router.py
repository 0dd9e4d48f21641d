"""The v1 API: every feature's router under /api/v1."""

from __future__ import annotations

from fastapi import APIRouter

from ..datasets.api import router as datasets_router
from ..errors import problem_responses
from ..exports.api import router as exports_router
from ..files.api import router as files_router
from ..rollouts.api import router as rollouts_router
from ..runs.api import router as runs_router
from ..scoring.api import router as scoring_router
from ..workspaces.api import router as workspaces_router

api_router = APIRouter(prefix="/api/v1", responses=problem_responses(400, 401, 404, 409, 413, 422))
for router in (workspaces_router, files_router, datasets_router, runs_router, rollouts_router, scoring_router,
               exports_router):
    api_router.include_router(router)
