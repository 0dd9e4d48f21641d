"""Promotion: a rollout (or every failing rollout of a run) becomes a task of a dataset, in one new version.

The task carries the rollout's task (instruction, input, output schema, metadata, split, files) or its
ad-hoc input, optionally the rollout's output as the expected output, and `metadata.promoted_from` naming
the rollout. A key already in the target dataset gets a new revision, so promoting again is safe.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy.orm import Session

from ..errors import InvalidInput, NotFound
from ..ids import has_prefix
from ..models import Dataset, Rollout, Run
from ..runs.repository import RunRepository
from ..runs.service import resolve_run
from .repository import DatasetRepository
from .schemas import DatasetCreate, PromoteResult, PromoteRollout, PromoteRun, TaskIn, TaskUpdate, VersionCreate
from .service import TASK_FIELDS, apply_version, create_dataset, resolve_dataset


def _task_from(session: Session, workspace_id: str, run: Run, rollout: Rollout, key: str | None,
               use_output: bool) -> dict[str, Any]:
    repo = DatasetRepository(session)
    origin: dict[str, Any] = {"rollout_id": rollout.id, "run": run.number, "attempt": rollout.attempt,
                              "status": rollout.status, "reward": rollout.reward}
    values: dict[str, Any]
    task = repo.get_task(workspace_id, rollout.task_id) if rollout.task_id else None
    if task is not None:
        values = {"instruction": task.instruction, "input": task.input, "expected_output": task.expected_output,
                  "output_schema": task.output_schema, "metadata": dict(task.metadata_ or {}), "split": task.split,
                  "files": repo.file_ids_of(task.id)}
        origin["task_key"] = task.key
        default_key = task.key
    else:
        given = rollout.input
        task_input = given if isinstance(given, dict) else (None if given is None else {"input": given})
        instruction = task_input.get("instruction") if task_input else None
        values = {"instruction": instruction if isinstance(instruction, str) else "", "input": task_input,
                  "expected_output": None, "output_schema": None, "metadata": {}, "split": None, "files": []}
        default_key = f"run{run.number}-attempt{rollout.attempt}"
    if use_output:
        values["expected_output"] = rollout.output
    values["metadata"]["promoted_from"] = origin
    values["key"] = key or default_key
    return values


def _write(session: Session, workspace_id: str, dataset_ref: str, tasks: Sequence[dict[str, Any]],
           message: str) -> PromoteResult:
    dataset: Dataset | None
    try:
        dataset = resolve_dataset(session, workspace_id, dataset_ref, for_update=True)
    except NotFound as error:
        if has_prefix(dataset_ref, "ds"):
            raise NotFound(error.detail, errors=[{"field": "dataset", "message": "no such dataset"}]) from error
        dataset = None
    if dataset is None:
        created = create_dataset(session, workspace_id, DatasetCreate(
            name=dataset_ref, tasks=[TaskIn(**t) for t in tasks], message=message))
        return PromoteResult(dataset_id=created.id, dataset=created.name, version=created.latest_version,
                             created_dataset=True, keys=[t["key"] for t in tasks], added=len(tasks), updated=0)
    existing = DatasetRepository(session).current_tasks_by_key(dataset.id, [t["key"] for t in tasks])
    add = [TaskIn(**t) for t in tasks if t["key"] not in existing]
    update = [TaskUpdate(**{name: t[name] for name in ("key", "files", *TASK_FIELDS)})
              for t in tasks if t["key"] in existing]
    version = apply_version(session, workspace_id, dataset, VersionCreate(message=message, add=add, update=update))
    return PromoteResult(dataset_id=dataset.id, dataset=dataset.name, version=version.number, created_dataset=False,
                         keys=[t["key"] for t in tasks], added=len(add), updated=len(update))


def promote_rollout(session: Session, workspace_id: str, rollout: Rollout, body: PromoteRollout) -> PromoteResult:
    run = resolve_run(session, workspace_id, rollout.run_id)
    task = _task_from(session, workspace_id, run, rollout, body.key, body.use_output_as_expected)
    message = body.message or f"promote run {run.number}, attempt {rollout.attempt}"
    return _write(session, workspace_id, body.dataset, [task], message)


def promote_run(session: Session, workspace_id: str, run_ref: str, body: PromoteRun) -> PromoteResult:
    """All failing (or below-threshold) rollouts of a run, one task per source task (its latest attempt)."""
    run = resolve_run(session, workspace_id, run_ref)
    chosen: dict[str, dict[str, Any]] = {}
    for rollout in RunRepository(session).promotable_rollouts(run.id, body.statuses, body.reward_below):
        task = _task_from(session, workspace_id, run, rollout, None, body.use_output_as_expected)
        chosen[task["key"]] = task
    if not chosen:
        raise InvalidInput(f"Run {run.number} has no rollouts with status {', '.join(body.statuses)}"
                           + (f" or a reward below {body.reward_below}" if body.reward_below is not None else "")
                           + "; nothing to promote.", field="statuses")
    message = body.message or f"promote {len(chosen)} failing tasks of run {run.number}"
    return _write(session, workspace_id, body.dataset, list(chosen.values()), message)
