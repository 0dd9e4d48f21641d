"""REST routes for datasets, versions and tasks."""

from __future__ import annotations

from fastapi import Query

from ..api.deps import CurrentCaller, ReadSession, WriteSession
from ..api.routing import api_router
from ..common.pagination import DEFAULT_LIMIT, MAX_LIMIT
from ..common.schemas import INT32_MAX, Page
from . import service
from .schemas import AttachFiles, DatasetCreate, DatasetOut, TaskOut, VersionCreate, VersionOut
from .transfer_api import router as transfer_router

router = api_router(tags=["datasets"])

Limit = Query(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT)


@router.post("/datasets", response_model=DatasetOut, status_code=201)
def create_dataset(body: DatasetCreate, caller: CurrentCaller, session: WriteSession) -> DatasetOut:
    """Create a dataset; its tasks (if any) become version 1."""
    dataset = service.create_dataset(session, caller.workspace_id, body)
    return service.dataset_out(session, dataset)


@router.get("/datasets", response_model=Page[DatasetOut])
def list_datasets(caller: CurrentCaller, session: ReadSession, cursor: str | None = None, limit: int = Limit,
                  q: str | None = Query(None, description="Substring of the name.")) -> Page[DatasetOut]:
    """Datasets of the workspace, by name."""
    return service.list_datasets(session, caller.workspace_id, cursor=cursor, limit=limit, search=q)


@router.get("/datasets/{dataset}", response_model=DatasetOut)
def get_dataset(dataset: str, caller: CurrentCaller, session: ReadSession) -> DatasetOut:
    """A dataset by ID or name."""
    return service.dataset_out(session, service.resolve_dataset(session, caller.workspace_id, dataset))


@router.post("/datasets/{dataset}/versions", response_model=VersionOut, status_code=201)
def create_version(dataset: str, body: VersionCreate, caller: CurrentCaller, session: WriteSession) -> VersionOut:
    """Add, update and remove tasks in one request, making one new version."""
    found = service.resolve_dataset(session, caller.workspace_id, dataset, for_update=True)
    return VersionOut.model_validate(service.apply_version(session, caller.workspace_id, found, body))


@router.get("/datasets/{dataset}/versions", response_model=Page[VersionOut])
def list_versions(dataset: str, caller: CurrentCaller, session: ReadSession, cursor: str | None = None,
                  limit: int = Limit) -> Page[VersionOut]:
    """Versions of a dataset, newest first, with their change counts."""
    found = service.resolve_dataset(session, caller.workspace_id, dataset)
    return service.list_versions(session, found, cursor=cursor, limit=limit)


@router.get("/datasets/{dataset}/versions/{version}/tasks", response_model=Page[TaskOut])
def list_version_tasks(dataset: str, version: int, caller: CurrentCaller, session: ReadSession,
                       cursor: str | None = None, limit: int = Limit) -> Page[TaskOut]:
    """Tasks of one version, by key."""
    found = service.resolve_dataset(session, caller.workspace_id, dataset)
    number = service.resolve_version(session, found, version)
    return service.list_tasks(session, found, number, cursor=cursor, limit=limit)


@router.get("/datasets/{dataset}/tasks", response_model=Page[TaskOut])
def list_tasks(dataset: str, caller: CurrentCaller, session: ReadSession, cursor: str | None = None,
               limit: int = Limit,
               version: int | None = Query(None, ge=1, le=INT32_MAX, description="Default: latest."),
               q: str | None = Query(None, description="Substring of key or instruction.")) -> Page[TaskOut]:
    """Tasks of the latest (or a given) version, by key."""
    found = service.resolve_dataset(session, caller.workspace_id, dataset)
    number = service.resolve_version(session, found, version)
    return service.list_tasks(session, found, number, cursor=cursor, limit=limit, search=q)


@router.get("/datasets/{dataset}/tasks/{key}", response_model=TaskOut)
def get_task(dataset: str, key: str, caller: CurrentCaller, session: ReadSession,
             version: int | None = Query(None, ge=1, le=INT32_MAX)) -> TaskOut:
    """One task by key, in the latest (or a given) version."""
    found = service.resolve_dataset(session, caller.workspace_id, dataset)
    return service.get_task_by_key(session, found, key, service.resolve_version(session, found, version))


@router.post("/datasets/{dataset}/tasks/{key}/files", response_model=VersionOut, status_code=201)
def attach_files(dataset: str, key: str, body: AttachFiles, caller: CurrentCaller,
                 session: WriteSession) -> VersionOut:
    """Attach uploaded files to a task (a new version)."""
    found = service.resolve_dataset(session, caller.workspace_id, dataset, for_update=True)
    return VersionOut.model_validate(
        service.attach_files(session, caller.workspace_id, found, key, body.files, body.message)
    )


@router.get("/tasks/{task_id}", response_model=TaskOut)
def get_task_by_id(task_id: str, caller: CurrentCaller, session: ReadSession) -> TaskOut:
    """One task revision by ID."""
    return service.get_task(session, caller.workspace_id, task_id)


router.include_router(transfer_router)
