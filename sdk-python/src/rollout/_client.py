"""The synchronous client and the objects it hands out: Run, Attempt, Dataset."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from types import TracebackType
from typing import Any

from ._attempt import AttemptBase
from ._config import Settings, resolve_settings
from ._core import (
    EXPORT_FILTERS,
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
from ._http import SyncTransport
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

log = logging.getLogger("rollout")


class Attempt(AttemptBase):
    """One attempt at one task. Record its trace with message(), tool_call(), llm_call(), span()...,
    then finish(). As a context manager it finishes on exit, failed if an exception escapes."""

    def __init__(self, client: Client, info: Rollout, task: RunTask | None = None) -> None:
        super().__init__(client._core.sender, info, task)
        self._client = client
        self._paths: list[Path] | None = None

    def materialize_files(self) -> list[Path]:
        """Download the task's files into the local cache (keyed by SHA-256) and return their paths, in
        the task's order. Later calls cost nothing."""
        if self._paths is None:
            task = self.task
            self._paths = self._client.materialize_files(task) if task is not None else []
        return list(self._paths)

    def finish(
        self,
        output: Any = None,
        *,
        status: str | None = None,
        error: Any = None,
        metadata: Mapping[str, Any] | None = None,
        wait: bool = False,
        timeout: float = 30.0,
    ) -> Rollout | None:
        """Finish the attempt: status succeeded (default), failed, errored or cancelled; failed by default
        when `error` is given. Queued behind its events; `wait=True` blocks until the server confirms
        and returns the stored rollout (raises DeliveryError or an APIError when it cannot)."""
        future: Future[Any] | None = Future() if wait else None
        op = self._finish_op(output, status, error, metadata, future)
        if op is None:
            return None
        self._sender.enqueue(op)
        if future is None:
            return None
        self._sender.kick()
        _wait_for(future, timeout, f"finishing {self.id}", None)
        try:
            data = self._client._t.request("GET", f"/rollouts/{self.id}", params={"events_limit": 0})
        except RolloutError as error:  # finished for sure; only reading it back failed
            log.warning("rollout: %s is finished but could not be read back: %s", self.id, error)
            return None
        return Rollout.model_validate(data)

    def __enter__(self) -> Attempt:
        self._activate()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if not self._finished:
                self.finish(**self._exit_args(exc))
        finally:
            self._deactivate()


def _wait_for(future: Future[Any], timeout: float, what: str, model: Any) -> Any:
    try:
        value = future.result(timeout)
    except FutureTimeout:
        raise DeliveryError(
            f"{what}: the server did not confirm within {timeout:.0f} s; the request stays queued (and "
            "spooled to disk if needed) and will be delivered when the server answers"
        ) from None
    return model.model_validate(value) if model is not None and isinstance(value, dict) else None


class Run:
    """One execution of a dataset version (or of ad-hoc production traffic)."""

    def __init__(self, client: Client, info: RunInfo) -> None:
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
        return f"<Run {self.number} {self.id} {self.status}>"

    @property
    def tasks(self) -> list[RunTask]:
        """The run's task list (tasks x repeats, or only the failed ones of a re-run), loaded once."""
        if self._tasks is None:
            self._tasks = list(self.iter_tasks())
        return self._tasks

    def iter_tasks(self) -> Iterator[RunTask]:
        """Stream the task list page by page (for very large runs)."""
        for item in self._client._t.paginate(f"/runs/{self.id}/tasks", page_size=500):
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
    ) -> Attempt:
        """Start an attempt at an item of `run.tasks` (or with no task, for production traffic)."""
        body, item = rollout_create_body(
            task, input=input, repeat_index=repeat_index, step=step, group_key=group_key, metadata=metadata
        )
        data = self._client._t.request(
            "POST", f"/runs/{self.id}/rollouts", json=body, idempotent=True, retry_conflict=True
        )
        if item is None and body.get("task_id"):
            item = RunTask(
                position=-1,
                repeat_index=body.get("repeat_index", 0),
                task=self._client.get_task(body["task_id"]),
            )
        attempt = Attempt(self._client, Rollout.model_validate(data), item)
        attempt._activate()
        attempt._context_token = None  # stays current until finished or replaced, not reset on exit
        return attempt

    def finish(self, status: str = "finished", *, wait: bool = True, timeout: float = 30.0) -> RunInfo | None:
        """Mark the run finished (or failed, cancelled) after everything queued before it is delivered."""
        future: Future[Any] | None = Future() if wait else None
        self._client._core.sender.enqueue((RUN_FINISH, self.id, {"status": status}, future))
        if future is None:
            return None
        self._client._core.sender.kick()
        info = _wait_for(future, timeout, f"finishing run {self.number}", RunInfo)
        if info is not None:
            self.info = info
        return info

    def refresh(self) -> Run:
        """Re-read the run (status, aggregates) from the server."""
        self.info = RunInfo.model_validate(self._client._t.request("GET", f"/runs/{self.id}"))
        return self

    def rollouts(self, *, limit: int | None = None, **filter_values: Any) -> Iterator[Rollout]:
        """This run's rollouts, newest first."""
        return self._client.list_rollouts(run=self.id, limit=limit, **filter_values)

    def __enter__(self) -> Run:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            self.finish("failed" if exc is not None else "finished", wait=exc is None, timeout=10.0)
        except Exception as error:  # never mask the agent's own exception or fail its exit
            log.warning("rollout: could not finish run %s: %s", self.number, error)


class Dataset:
    """A named, versioned collection of tasks."""

    def __init__(self, client: Client, info: DatasetInfo) -> None:
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

    def __repr__(self) -> str:
        return f"<Dataset {self.name!r} v{self.latest_version} ({self.task_count} tasks)>"

    def tasks(self, version: int | None = None) -> list[Task]:
        """Tasks of a version (default: the latest)."""
        path = f"/datasets/{self.id}/versions/{version}/tasks" if version else f"/datasets/{self.id}/tasks"
        return [Task.model_validate(t) for t in self._client._t.paginate(path, page_size=1000)]

    def task(self, key: str) -> Task:
        return Task.model_validate(self._client._t.request("GET", f"/datasets/{self.id}/tasks/{key}"))

    def versions(self) -> list[DatasetVersion]:
        return [DatasetVersion.model_validate(v) for v in self._client._t.paginate(f"/datasets/{self.id}/versions")]

    def new_version(
        self,
        *,
        add: Iterable[Any] = (),
        update: Iterable[Any] = (),
        remove: Iterable[str] = (),
        message: str | None = None,
        on_upload: Callable[[File], None] | None = None,
    ) -> DatasetVersion:
        """One new immutable version: tasks added, updated (by key; given fields replace) and removed."""
        body = {
            "message": message,
            "add": normalize_tasks(add, self._client._uploader(on_upload)),
            "update": normalize_tasks(update, self._client._uploader(on_upload), update=True),
            "remove": list(remove),
        }
        version = DatasetVersion.model_validate(
            self._client._t.request("POST", f"/datasets/{self.id}/versions", json=body)
        )
        self.refresh()
        return version

    def add_tasks(self, tasks: Iterable[Any], *, message: str | None = None) -> DatasetVersion:
        """Add tasks as a new version."""
        return self.new_version(add=tasks, message=message)

    def update_tasks(self, tasks: Iterable[Any], *, message: str | None = None) -> DatasetVersion:
        return self.new_version(update=tasks, message=message)

    def remove_tasks(self, keys: Iterable[str], *, message: str | None = None) -> DatasetVersion:
        return self.new_version(remove=keys, message=message)

    def refresh(self) -> Dataset:
        self.info = DatasetInfo.model_validate(self._client._t.request("GET", f"/datasets/{self.id}"))
        return self


class Client:
    """A connection to one Rollout server with one API key. Safe to share between threads.

    `Client()` reads ROLLOUT_BASE_URL / ROLLOUT_API_KEY (then the `rollout login` file) for what is
    not passed. Options: timeout, max_retries, spool_dir, max_queue_size, batch_max_events,
    flush_interval, retry_window, max_backoff, atexit_timeout, files_cache_dir, headers.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        deliver_spool: bool = True,
        **options: Any,
    ) -> None:
        settings = options.pop("_settings", None) or resolve_settings(base_url, api_key, **options)
        self._core: Core = options.pop("_core", None) or Core(settings, deliver_spool=deliver_spool)
        self._t = SyncTransport(self._core.settings)

    @property
    def settings(self) -> Settings:
        return self._core.settings

    @property
    def base_url(self) -> str:
        return self._core.settings.base_url

    # -- delivery --------------------------------------------------------------------------------------

    def flush(self, timeout: float | None = None) -> bool:
        """Block until every queued event, score and finish is on the server (True), or `timeout` runs out
        (False: what is left stays queued and spooled, and is delivered later)."""
        return self._core.flush(timeout)

    def close(self, timeout: float | None = None) -> bool:
        """Flush, stop the background sender and close connections."""
        delivered = self._core.close(timeout)
        self._t.close()
        return delivered

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- workspace and keys ----------------------------------------------------------------------------

    def health(self) -> dict[str, Any]:
        return self._t.request("GET", "/healthz")  # type: ignore[no-any-return]

    def whoami(self) -> Workspace:
        """The workspace this API key belongs to."""
        return Workspace.model_validate(self._t.request("GET", "/workspace"))

    def list_keys(self) -> list[ApiKey]:
        return [ApiKey.model_validate(k) for k in self._t.paginate("/keys")]

    def create_key(self, name: str = "api key") -> ApiKeyCreated:
        return ApiKeyCreated.model_validate(self._t.request("POST", "/keys", json={"name": name}))

    def revoke_key(self, key_id: str) -> ApiKey:
        return ApiKey.model_validate(self._t.request("DELETE", f"/keys/{key_id}"))

    # -- files -----------------------------------------------------------------------------------------

    def upload_file(self, source: Any, *, name: str | None = None, media_type: str | None = None) -> File:
        """Upload a path, bytes or (name, bytes); the server stores the bytes once per SHA-256."""
        return self._upload(to_source(source, name, media_type))

    def _upload(self, source: FileSource) -> File:
        data = self._t.request(
            "POST",
            "/files",
            params={"name": source.name},
            content=source.open,
            headers={"Content-Type": source.media_type},
        )
        return File.model_validate(data)

    def _uploader(self, on_upload: Callable[[File], None] | None = None) -> Callable[[FileSource], File]:
        def upload(source: FileSource) -> File:
            file = self._upload(source)
            if on_upload is not None:
                on_upload(file)
            return file

        return upload

    def get_file(self, file_id: str) -> File:
        return File.model_validate(self._t.request("GET", f"/files/{file_id}"))

    def download_file(self, file: File | str, path: str | Path) -> Path:
        """Save a file's bytes at `path`."""
        info = file if isinstance(file, File) else self.get_file(file)
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "wb") as handle:
            self._t.stream_to(info.download_path or f"/files/{info.id}/content", handle)
        return target

    def materialize_files(self, task: Task | RunTask) -> list[Path]:
        """Local paths of a task's files, downloaded once into the SHA-256-keyed cache."""
        task = task.task if isinstance(task, RunTask) else task
        return materialize(self._t, self.settings.resolved_files_cache_dir, task.files)

    # -- datasets --------------------------------------------------------------------------------------

    def create_dataset(
        self,
        name: str,
        tasks: Iterable[Any] = (),
        *,
        description: str | None = None,
        message: str | None = None,
        on_upload: Callable[[File], None] | None = None,
    ) -> Dataset:
        """Create a dataset (version 1). Each task is a dict of key, instruction, input, expected_output,
        output_schema, metadata, split and files (paths, bytes, (name, bytes) or file ids)."""
        body = {
            "name": name,
            "description": description,
            "message": message,
            "tasks": normalize_tasks(tasks, self._uploader(on_upload)),
        }
        return Dataset(self, DatasetInfo.model_validate(self._t.request("POST", "/datasets", json=body)))

    def get_dataset(self, ref: str) -> Dataset:
        """A dataset by name or id."""
        return Dataset(self, DatasetInfo.model_validate(self._t.request("GET", f"/datasets/{ref}")))

    def list_datasets(self, *, limit: int | None = None) -> Iterator[Dataset]:
        for item in self._t.paginate("/datasets", limit=limit):
            yield Dataset(self, DatasetInfo.model_validate(item))

    def get_task(self, task_id: str) -> Task:
        return Task.model_validate(self._t.request("GET", f"/tasks/{task_id}"))

    # -- runs and rollouts -----------------------------------------------------------------------------

    def start_run(
        self,
        dataset: Any = None,
        *,
        version: int | None = None,
        workflow_name: str | None = None,
        group_id: str | None = None,
        agent: str | None = None,
        agent_version: str | None = None,
        model: str | None = None,
        params: Mapping[str, Any] | None = None,
        tags: Iterable[str] | None = None,
        num_repeats: int = 1,
        reward_score: str | None = None,
        only_failed_from: Any = None,
        failed_statuses: Iterable[str] | None = None,
        reward_below: float | None = None,
    ) -> Run:
        """Start a run of a dataset (name or id; latest version unless `version`), of the failed tasks of
        an earlier run (`only_failed_from`; with `reward_below`, also its tasks rewarded below that), or
        with no dataset for production traffic."""
        body = run_create_body(
            dataset,
            version=version,
            workflow_name=workflow_name,
            group_id=group_id,
            agent=agent,
            agent_version=agent_version,
            model=model,
            params=params,
            tags=tags,
            num_repeats=num_repeats,
            reward_score=reward_score,
            only_failed_from=only_failed_from,
            failed_statuses=failed_statuses,
            reward_below=reward_below,
        )
        data = self._t.request("POST", "/runs", json=body, idempotent=True, retry_conflict=True)
        return Run(self, RunInfo.model_validate(data))

    def get_run(self, ref: str | int) -> Run:
        """A run by id or number."""
        return Run(self, RunInfo.model_validate(self._t.request("GET", f"/runs/{ref}")))

    def delete_run(self, ref: str | int) -> None:
        """Delete a run and everything recorded in it: rollouts, trace events, scores. Irreversible. A run that
        re-runs were made from is refused (ConflictError) until those are deleted."""
        self._t.request("DELETE", f"/runs/{ref}")

    def list_runs(self, *, limit: int | None = None, **filter_values: Any) -> Iterator[RunInfo]:
        """Runs, newest first. Filters: status, workflow_name, group_id, dataset, agent_name, model, tag."""
        for item in self._t.paginate("/runs", filters(RUN_FILTERS, filter_values), limit=limit):
            yield RunInfo.model_validate(item)

    def get_rollout(self, ref: str | tuple[Any, int], *, events: bool = True) -> RolloutDetail:
        """A rollout by id, or by handle ('47/3' or (47, 3): run 47, attempt 3), with its scores and
        (by default) every event of its trace."""
        handle = split_ref(ref)
        path = f"/runs/{handle[0]}/rollouts/{handle[1]}" if handle else f"/rollouts/{ref}"
        data = self._t.request("GET", path, params={"events_limit": 1000 if events else 0})
        detail = RolloutDetail.model_validate(data)
        if events and detail.events_next_cursor:
            rest = self._t.paginate(
                f"/rollouts/{detail.id}/events", {"cursor": detail.events_next_cursor}, page_size=1000
            )
            detail.events.extend(Event.model_validate(e) for e in rest)
            detail.events_next_cursor = None
        return detail

    def delete_rollout(self, rollout_id: str) -> None:
        """Delete a rollout with its trace events and scores. Irreversible."""
        self._t.request("DELETE", f"/rollouts/{rollout_id}")

    def list_events(self, rollout_id: str) -> Iterator[Event]:
        for item in self._t.paginate(f"/rollouts/{rollout_id}/events", page_size=1000):
            yield Event.model_validate(item)

    def list_scores(self, rollout_id: str) -> list[Score]:
        return [Score.model_validate(s) for s in self._t.paginate(f"/rollouts/{rollout_id}/scores")]

    def export(self, format: str = "rollout", **filter_values: Any) -> Iterator[dict[str, Any]]:
        """Stream rollouts as training data, one dict per line, in a format trainers read: rollout (native,
        with traces and scores), nemo-gym, openai-sft, openai-dpo, trl-sft, trl-dpo or grpo. Filters: run (one
        or a list), dataset, split, status, score_name/score_min/score_max, reward_min/reward_max,
        started_after/started_before, tag, step, include_discarded, limit; DPO/GRPO options: margin, pairs,
        style, group_by."""
        params = filters(EXPORT_FILTERS, filter_values)
        with self._t.stream("GET", f"/exports/{format}", params=params) as response:
            for line in response.iter_lines():
                if line.strip():
                    yield json.loads(line)

    def import_rollouts(
        self,
        source: str | Path | bytes,
        *,
        format: str = "rollout",
        dataset: str | None = None,
        workflow_name: str | None = None,
    ) -> dict[str, Any]:
        """Import a JSONL file (native `rollout.v1` lines or NeMo Gym rollouts) as a new run; returns the
        server's summary (run, counts, metrics)."""

        def body() -> Any:
            return source if isinstance(source, bytes) else open(source, "rb")  # the transport closes it

        params = {"format": format, "dataset": dataset, "workflow_name": workflow_name}
        result = self._t.request(
            "POST", "/imports", params=params, content=body, headers={"Content-Type": "application/x-ndjson"}
        )
        return result  # type: ignore[no-any-return]

    def list_rollouts(self, *, limit: int | None = None, **filter_values: Any) -> Iterator[Rollout]:
        """Rollouts, newest first. Filters: run, task_id, status, workflow_name, group_id, started_after,
        started_before, reward_min, reward_max, step, group_key."""
        for item in self._t.paginate("/rollouts", filters(ROLLOUT_FILTERS, filter_values), limit=limit):
            yield Rollout.model_validate(item)
