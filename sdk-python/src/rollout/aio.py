"""The asyncio twin: `AsyncClient`, and module-level functions on a default async client.

Recording events is the same non-blocking call as in the sync SDK (no await); the calls that talk to
the server are coroutines. `start_run()` and `run.start_rollout()` can be awaited or used with
`async with`:

    run = await rollout.aio.start_run("paper-summary-v1")
    for task in run.tasks:
        async with run.start_rollout(task) as attempt:
            attempt.message("hello", role="user")
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
from collections.abc import AsyncIterator, Coroutine, Generator, Iterable, Mapping
from concurrent.futures import Future
from pathlib import Path
from types import TracebackType
from typing import Any, Generic, TypeVar

from ._attempt import AttemptBase
from ._config import Settings, resolve_settings
from ._core import (
    ROLLOUT_FILTERS,
    RUN_FILTERS,
    Core,
    filters,
    normalize_tasks,
    rollout_create_body,
    run_create_body,
    split_ref,
)
from ._errors import DeliveryError, RolloutError
from ._files import FileSource, materialize, to_source
from ._http import AsyncTransport, SyncTransport
from ._spool import RUN_FINISH
from ._types import (
    ApiKey,
    ApiKeyCreated,
    DatasetInfo,
    DatasetVersion,
    Event,
    File,
    Rollout,
    RolloutDetail,
    RunInfo,
    RunTask,
    Score,
    Task,
    Workspace,
)

T = TypeVar("T")
log = logging.getLogger("rollout")


class _Pending(Generic[T]):
    """Await it for the object, or `async with` it to also enter the object's context."""

    def __init__(self, coro: Coroutine[Any, Any, T]) -> None:
        self._coro = coro
        self._value: Any = None

    def __await__(self) -> Generator[Any, None, T]:
        return self._coro.__await__()

    async def __aenter__(self) -> T:
        self._value = await self._coro
        return await self._value.__aenter__()  # type: ignore[no-any-return]

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> Any:
        return await self._value.__aexit__(exc_type, exc, tb)


async def _wait_for(future: Future[Any], timeout: float, what: str, model: Any) -> Any:
    try:
        value = await asyncio.wait_for(asyncio.wrap_future(future), timeout)
    except TimeoutError:
        raise DeliveryError(
            f"{what}: the server did not confirm within {timeout:.0f} s; the request stays queued (and "
            "spooled to disk if needed) and will be delivered when the server answers"
        ) from None
    return model.model_validate(value) if model is not None and isinstance(value, dict) else None


class AsyncAttempt(AttemptBase):
    """The async attempt: event methods are plain calls; finish() and materialize_files() are awaited."""

    def __init__(self, client: AsyncClient, info: Rollout, task: RunTask | None = None) -> None:
        super().__init__(client._core.sender, info, task)
        self._client = client
        self._paths: list[Path] | None = None

    async def materialize_files(self) -> list[Path]:
        """Download the task's files into the SHA-256-keyed cache; later calls cost nothing."""
        if self._paths is None:
            task = self.task
            self._paths = await self._client.materialize_files(task) if task is not None else []
        return list(self._paths)

    async def finish(
        self,
        output: Any = None,
        *,
        status: str | None = None,
        error: Any = None,
        metadata: Mapping[str, Any] | None = None,
        wait: bool = False,
        timeout: float = 30.0,
    ) -> Rollout | None:
        """See Attempt.finish: queued behind the attempt's events; `wait=True` awaits the confirmation."""
        future: Future[Any] | None = Future() if wait else None
        op = self._finish_op(output, status, error, metadata, future)
        if op is None:
            return None
        self._sender.enqueue(op)
        if future is None:
            return None
        self._sender.kick()
        await _wait_for(future, timeout, f"finishing {self.id}", None)
        try:
            data = await self._client._t.request("GET", f"/rollouts/{self.id}", params={"events_limit": 0})
        except RolloutError as error:  # finished for sure; only reading it back failed
            log.warning("rollout: %s is finished but could not be read back: %s", self.id, error)
            return None
        return Rollout.model_validate(data)

    async def __aenter__(self) -> AsyncAttempt:
        self._activate()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if not self._finished:
                await self.finish(**self._exit_args(exc))
        finally:
            self._deactivate()


class AsyncRun:
    """The async run. `run.tasks` is loaded when the run is started or fetched."""

    def __init__(self, client: AsyncClient, info: RunInfo) -> None:
        self._client = client
        self.info = info
        self._tasks: list[RunTask] | None = None

    id = property(lambda self: self.info.id)
    number = property(lambda self: self.info.number)
    url = property(lambda self: self.info.url)
    status = property(lambda self: self.info.status)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name == "info":
            raise AttributeError(name)
        return getattr(self.info, name)

    def __repr__(self) -> str:
        return f"<AsyncRun {self.number} {self.id} {self.status}>"

    @property
    def tasks(self) -> list[RunTask]:
        if self._tasks is None:
            raise RuntimeError(
                "the task list is not loaded: use `await run.load_tasks()` (or start the run "
                "with load_tasks=True, the default)"
            )
        return self._tasks

    async def load_tasks(self) -> list[RunTask]:
        self._tasks = [item async for item in self.iter_tasks()]
        return self._tasks

    async def iter_tasks(self) -> AsyncIterator[RunTask]:
        async for page in self._client._t.paginate_pages(f"/runs/{self.id}/tasks", page_size=500):
            for item in page:
                yield RunTask.model_validate(item)

    def start_rollout(
        self,
        task: RunTask | Task | str | None = None,
        *,
        input: Any = None,
        repeat_index: int | None = None,
        step: int | None = None,
        group_key: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> _Pending[AsyncAttempt]:
        """`await run.start_rollout(task)` or `async with run.start_rollout(task) as attempt:`."""
        return _Pending(
            self._start_rollout(
                task,
                input=input,
                repeat_index=repeat_index,
                step=step,
                group_key=group_key,
                metadata=metadata,
            )
        )

    async def _start_rollout(self, task: Any, **kwargs: Any) -> AsyncAttempt:
        body, item = rollout_create_body(task, **kwargs)
        data = await self._client._t.request(
            "POST", f"/runs/{self.id}/rollouts", json=body, idempotent=True, retry_conflict=True
        )
        if item is None and body.get("task_id"):
            item = RunTask(
                position=-1,
                repeat_index=body.get("repeat_index", 0),
                task=await self._client.get_task(body["task_id"]),
            )
        attempt = AsyncAttempt(self._client, Rollout.model_validate(data), item)
        attempt._activate()
        attempt._context_token = None
        return attempt

    async def finish(self, status: str = "finished", *, wait: bool = True, timeout: float = 30.0) -> RunInfo | None:
        future: Future[Any] | None = Future() if wait else None
        self._client._core.sender.enqueue((RUN_FINISH, self.id, {"status": status}, future))
        if future is None:
            return None
        self._client._core.sender.kick()
        info = await _wait_for(future, timeout, f"finishing run {self.number}", RunInfo)
        if info is not None:
            self.info = info
        return info  # type: ignore[no-any-return]

    async def refresh(self) -> AsyncRun:
        self.info = RunInfo.model_validate(await self._client._t.request("GET", f"/runs/{self.id}"))
        return self

    def rollouts(self, *, limit: int | None = None, **filter_values: Any) -> AsyncIterator[Rollout]:
        return self._client.list_rollouts(run=self.id, limit=limit, **filter_values)

    async def __aenter__(self) -> AsyncRun:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            await self.finish("failed" if exc is not None else "finished", wait=exc is None, timeout=10.0)
        except Exception as error:
            import logging

            logging.getLogger("rollout").warning("rollout: could not finish run %s: %s", self.number, error)


class AsyncDataset:
    def __init__(self, client: AsyncClient, info: DatasetInfo) -> None:
        self._client = client
        self.info = info

    id = property(lambda self: self.info.id)
    name = property(lambda self: self.info.name)
    latest_version = property(lambda self: self.info.latest_version)
    task_count = property(lambda self: self.info.task_count)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name == "info":
            raise AttributeError(name)
        return getattr(self.info, name)

    async def tasks(self, version: int | None = None) -> list[Task]:
        path = f"/datasets/{self.id}/versions/{version}/tasks" if version else f"/datasets/{self.id}/tasks"
        return [Task.model_validate(t) async for t in self._client._items(path, page_size=1000)]

    async def versions(self) -> list[DatasetVersion]:
        return [DatasetVersion.model_validate(v) async for v in self._client._items(f"/datasets/{self.id}/versions")]

    async def new_version(
        self,
        *,
        add: Iterable[Any] = (),
        update: Iterable[Any] = (),
        remove: Iterable[str] = (),
        message: str | None = None,
    ) -> DatasetVersion:
        add_wire = await self._client._normalize(add)
        update_wire = await self._client._normalize(update, update=True)
        body = {"message": message, "add": add_wire, "update": update_wire, "remove": list(remove)}
        data = await self._client._t.request("POST", f"/datasets/{self.id}/versions", json=body)
        self.info = DatasetInfo.model_validate(await self._client._t.request("GET", f"/datasets/{self.id}"))
        return DatasetVersion.model_validate(data)

    async def add_tasks(self, tasks: Iterable[Any], *, message: str | None = None) -> DatasetVersion:
        return await self.new_version(add=tasks, message=message)


class AsyncClient:
    """The asyncio client; same constructor and options as `rollout.Client`. Use it from any event loop."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        deliver_spool: bool = True,
        **options: Any,
    ) -> None:
        core = options.pop("_core", None)
        if core is None:
            core = Core(resolve_settings(base_url, api_key, **options), deliver_spool=deliver_spool)
        self._core: Core = core
        self._t = AsyncTransport(core.settings)
        self._sync: SyncTransport | None = None
        self._sync_lock = threading.Lock()

    @property
    def settings(self) -> Settings:
        return self._core.settings

    def _blocking(self) -> SyncTransport:
        with self._sync_lock:
            if self._sync is None:
                self._sync = SyncTransport(self._core.settings)
            return self._sync

    async def _items(
        self,
        path: str,
        params: Mapping[str, Any] | None = None,
        *,
        page_size: int = 200,
        limit: int | None = None,
    ) -> AsyncIterator[Any]:
        seen = 0
        async for page in self._t.paginate_pages(path, params, page_size=page_size):
            for item in page:
                yield item
                seen += 1
                if limit is not None and seen >= limit:
                    return

    async def _normalize(self, tasks: Iterable[Any], *, update: bool = False) -> list[dict[str, Any]]:
        transport = self._blocking()

        def upload(source: FileSource) -> File:
            return File.model_validate(
                transport.request(
                    "POST",
                    "/files",
                    params={"name": source.name},
                    content=source.open,
                    headers={"Content-Type": source.media_type},
                )
            )

        return await asyncio.to_thread(functools.partial(normalize_tasks, update=update), list(tasks), upload)

    async def flush(self, timeout: float | None = None) -> bool:
        """Await delivery of everything queued (see Client.flush); runs off the event loop."""
        return await asyncio.to_thread(self._core.flush, timeout)

    async def aclose(self, timeout: float | None = None) -> bool:
        delivered = await asyncio.to_thread(self._core.close, timeout)
        await self._t.aclose()
        if self._sync is not None:
            self._sync.close()
        return delivered

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def whoami(self) -> Workspace:
        return Workspace.model_validate(await self._t.request("GET", "/workspace"))

    async def list_keys(self) -> list[ApiKey]:
        return [ApiKey.model_validate(k) async for k in self._items("/keys")]

    async def create_key(self, name: str = "api key") -> ApiKeyCreated:
        return ApiKeyCreated.model_validate(await self._t.request("POST", "/keys", json={"name": name}))

    async def revoke_key(self, key_id: str) -> ApiKey:
        return ApiKey.model_validate(await self._t.request("DELETE", f"/keys/{key_id}"))

    async def upload_file(self, source: Any, *, name: str | None = None, media_type: str | None = None) -> File:
        file_source = to_source(source, name, media_type)
        transport = self._blocking()
        data = await asyncio.to_thread(
            transport.request,
            "POST",
            "/files",
            params={"name": file_source.name},
            content=file_source.open,
            headers={"Content-Type": file_source.media_type},
        )
        return File.model_validate(data)

    async def get_file(self, file_id: str) -> File:
        return File.model_validate(await self._t.request("GET", f"/files/{file_id}"))

    async def materialize_files(self, task: Task | RunTask) -> list[Path]:
        task = task.task if isinstance(task, RunTask) else task
        return await asyncio.to_thread(
            materialize, self._blocking(), self.settings.resolved_files_cache_dir, task.files
        )

    async def create_dataset(
        self,
        name: str,
        tasks: Iterable[Any] = (),
        *,
        description: str | None = None,
        message: str | None = None,
    ) -> AsyncDataset:
        body = {
            "name": name,
            "description": description,
            "message": message,
            "tasks": await self._normalize(tasks),
        }
        return AsyncDataset(self, DatasetInfo.model_validate(await self._t.request("POST", "/datasets", json=body)))

    async def get_dataset(self, ref: str) -> AsyncDataset:
        return AsyncDataset(self, DatasetInfo.model_validate(await self._t.request("GET", f"/datasets/{ref}")))

    async def list_datasets(self, *, limit: int | None = None) -> AsyncIterator[AsyncDataset]:
        async for item in self._items("/datasets", limit=limit):
            yield AsyncDataset(self, DatasetInfo.model_validate(item))

    async def get_task(self, task_id: str) -> Task:
        return Task.model_validate(await self._t.request("GET", f"/tasks/{task_id}"))

    def start_run(self, dataset: Any = None, *, load_tasks: bool = True, **options: Any) -> _Pending[AsyncRun]:
        """`await client.start_run(...)` or `async with client.start_run(...) as run:`; same options as
        Client.start_run. The task list is loaded unless load_tasks=False."""
        return _Pending(self._start_run(dataset, load_tasks, options))

    async def _start_run(self, dataset: Any, load_tasks: bool, options: dict[str, Any]) -> AsyncRun:
        body = run_create_body(dataset, **options)
        data = await self._t.request("POST", "/runs", json=body, idempotent=True, retry_conflict=True)
        run = AsyncRun(self, RunInfo.model_validate(data))
        if load_tasks:
            await run.load_tasks()
        return run

    async def get_run(self, ref: str | int, *, load_tasks: bool = True) -> AsyncRun:
        run = AsyncRun(self, RunInfo.model_validate(await self._t.request("GET", f"/runs/{ref}")))
        if load_tasks:
            await run.load_tasks()
        return run

    async def list_runs(self, *, limit: int | None = None, **filter_values: Any) -> AsyncIterator[RunInfo]:
        async for item in self._items("/runs", filters(RUN_FILTERS, filter_values), limit=limit):
            yield RunInfo.model_validate(item)

    async def get_rollout(self, ref: str | tuple[Any, int], *, events: bool = True) -> RolloutDetail:
        handle = split_ref(ref)
        path = f"/runs/{handle[0]}/rollouts/{handle[1]}" if handle else f"/rollouts/{ref}"
        detail = RolloutDetail.model_validate(
            await self._t.request("GET", path, params={"events_limit": 1000 if events else 0})
        )
        if events and detail.events_next_cursor:
            async for event in self._items(
                f"/rollouts/{detail.id}/events", {"cursor": detail.events_next_cursor}, page_size=1000
            ):
                detail.events.append(Event.model_validate(event))
            detail.events_next_cursor = None
        return detail

    async def list_scores(self, rollout_id: str) -> list[Score]:
        return [Score.model_validate(s) async for s in self._items(f"/rollouts/{rollout_id}/scores")]

    async def list_rollouts(self, *, limit: int | None = None, **filter_values: Any) -> AsyncIterator[Rollout]:
        async for item in self._items("/rollouts", filters(ROLLOUT_FILTERS, filter_values), limit=limit):
            yield Rollout.model_validate(item)


# -- module-level functions on a default async client (sharing the default sync client's queue) ---------

_default: AsyncClient | None = None
_default_lock = threading.Lock()


def get_client() -> AsyncClient:
    """The default async client, built from rollout.configure(...) / the environment."""
    global _default
    from . import _default as sync_default

    core = sync_default.get_client()._core
    with _default_lock:
        if _default is None or _default._core is not core:
            _default = AsyncClient(_core=core)
        return _default


def start_run(dataset: Any = None, **options: Any) -> _Pending[AsyncRun]:
    return get_client().start_run(dataset, **options)


async def get_run(ref: str | int, *, load_tasks: bool = True) -> AsyncRun:
    return await get_client().get_run(ref, load_tasks=load_tasks)


async def get_rollout(ref: str | tuple[Any, int], *, events: bool = True) -> RolloutDetail:
    return await get_client().get_rollout(ref, events=events)


def list_rollouts(*, limit: int | None = None, **filter_values: Any) -> AsyncIterator[Rollout]:
    return get_client().list_rollouts(limit=limit, **filter_values)


def list_runs(*, limit: int | None = None, **filter_values: Any) -> AsyncIterator[RunInfo]:
    return get_client().list_runs(limit=limit, **filter_values)


async def create_dataset(name: str, tasks: Iterable[Any] = (), **options: Any) -> AsyncDataset:
    return await get_client().create_dataset(name, tasks, **options)


async def get_dataset(ref: str) -> AsyncDataset:
    return await get_client().get_dataset(ref)


async def flush(timeout: float | None = None) -> bool:
    return await get_client().flush(timeout)


__all__ = [
    "AsyncAttempt",
    "AsyncClient",
    "AsyncDataset",
    "AsyncRun",
    "create_dataset",
    "flush",
    "get_client",
    "get_dataset",
    "get_rollout",
    "get_run",
    "list_rollouts",
    "list_runs",
    "start_run",
]
