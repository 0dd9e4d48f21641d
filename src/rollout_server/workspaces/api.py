"""REST routes: the key's workspace and its API keys."""

from __future__ import annotations

from ..api.deps import CurrentCaller, ReadSession, WriteSession, key_cache
from ..api.routing import api_router
from ..common.schemas import Page
from . import service
from .schemas import ApiKeyCreate, ApiKeyCreated, ApiKeyOut, WorkspaceOut

router = api_router(tags=["workspace"])


@router.get("/workspace", response_model=WorkspaceOut)
def get_workspace(caller: CurrentCaller, session: ReadSession) -> WorkspaceOut:
    """The workspace the API key belongs to."""
    return WorkspaceOut.model_validate(service.get_workspace(session, caller.workspace_id))


@router.get("/keys", response_model=Page[ApiKeyOut])
def list_keys(caller: CurrentCaller, session: ReadSession) -> Page[ApiKeyOut]:
    """API keys of this workspace (secrets are never shown again)."""
    keys = service.list_api_keys(session, caller.workspace_id)
    return Page(items=[ApiKeyOut.model_validate(k) for k in keys])


@router.post("/keys", response_model=ApiKeyCreated, status_code=201)
def create_key(body: ApiKeyCreate, caller: CurrentCaller, session: WriteSession) -> ApiKeyCreated:
    """Create an API key; the secret is in this response only."""
    created = service.create_api_key(session, caller.workspace_id, body.name)
    return ApiKeyCreated(**ApiKeyOut.model_validate(created.key).model_dump(), secret=created.secret)


@router.delete("/keys/{key_id}", response_model=ApiKeyOut)
def revoke_key(key_id: str, caller: CurrentCaller, session: WriteSession) -> ApiKeyOut:
    """Revoke an API key; requests with it fail from now on."""
    key = service.revoke_api_key(session, caller.workspace_id, key_id)
    key_cache.revoke(key.id)
    return ApiKeyOut.model_validate(key)
