"""The default client behind the module-level functions (`rollout.start_run(...)` and friends)."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ._client import Client, Dataset, Run
from ._types import File, Rollout, RolloutDetail, RunInfo, RunTask, Task, Workspace

_client: Client | None = None
_lock = threading.Lock()


def configure(base_url: str | None = None, api_key: str | None = None, **options: Any) -> Client:
    """Set up the default client (arguments win over ROLLOUT_BASE_URL / ROLLOUT_API_KEY). A previous
    default client is flushed and closed. Returns the new client."""
    global _client
    client = Client(base_url, api_key, **options)
    with _lock:
        previous, _client = _client, client
    if previous is not None:
        previous.close()
    return client


def get_client() -> Client:
    """The default client, created from the environment on first use."""
    global _client
    with _lock:
        if _client is None:
            _client = Client()
        return _client


def start_run(dataset: Any = None, **options: Any) -> Run:
    """Start a run; see Client.start_run for the options."""
    return get_client().start_run(dataset, **options)


def get_run(ref: str | int) -> Run:
    return get_client().get_run(ref)


def list_runs(*, limit: int | None = None, **filters: Any) -> Iterator[RunInfo]:
    return get_client().list_runs(limit=limit, **filters)


def get_rollout(ref: str | tuple[Any, int], *, events: bool = True) -> RolloutDetail:
    return get_client().get_rollout(ref, events=events)


def list_rollouts(*, limit: int | None = None, **filters: Any) -> Iterator[Rollout]:
    return get_client().list_rollouts(limit=limit, **filters)


def create_dataset(name: str, tasks: Iterable[Any] = (), **options: Any) -> Dataset:
    return get_client().create_dataset(name, tasks, **options)


def get_dataset(ref: str) -> Dataset:
    return get_client().get_dataset(ref)


def list_datasets(*, limit: int | None = None) -> Iterator[Dataset]:
    return get_client().list_datasets(limit=limit)


def upload_file(source: Any, *, name: str | None = None, media_type: str | None = None) -> File:
    return get_client().upload_file(source, name=name, media_type=media_type)


def materialize_files(task: Task | RunTask) -> list[Path]:
    return get_client().materialize_files(task)


def whoami() -> Workspace:
    return get_client().whoami()


def flush(timeout: float | None = None) -> bool:
    """Block until everything recorded so far is on the server (False if `timeout` ran out first)."""
    with _lock:
        client = _client
    return client.flush(timeout) if client is not None else True


def shutdown(timeout: float | None = None) -> bool:
    """Flush and stop the default client (also done automatically at interpreter exit)."""
    global _client
    with _lock:
        client, _client = _client, None
    return client.close(timeout) if client is not None else True
