"""The v1 API: every feature's router under /api/v1."""

from __future__ import annotations

from fastapi import APIRouter

from ..datasets.api import router as datasets_router
from ..files.api import router as files_router
from ..rollouts.api import router as rollouts_router
from ..runs.api import router as runs_router
from ..workspaces.api import router as workspaces_router

api_router = APIRouter(prefix="/api/v1")
for router in (workspaces_router, files_router, datasets_router, runs_router, rollouts_router):
    api_router.include_router(router)
