"""Queries for rollouts, trace events and scores."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Select, Text, case, cast, func, or_, select
from sqlalchemy.orm import Session

from ..db.bulk import insert_returning_new
from ..models import Rollout, Run, Score, Task, TraceEvent

# Filters on the rollout's run, and the group-by keys that need the run joined.
RUN_FILTERS = ("workflow_name", "group_id", "agent_name", "dataset_id", "model")
GROUP_BY_RUN = ("workflow", "dataset", "agent", "model", "run")


def _group_column(group_by: str) -> Any:
    columns = {"workflow": Run.workflow_name, "dataset": Run.dataset_id, "agent": Run.agent_name,
               "model": Run.model, "run": Run.number, "status": Rollout.status, "task": Rollout.task_id,
               "step": Rollout.step}
    if group_by not in columns:
        raise ValueError(f"cannot group by {group_by!r}")
    return columns[group_by]


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


EVENT_COLUMNS = ("rollout_id", "event_id", "seq", "kind", "parent_id", "name", "started_at", "ended_at",
                 "duration_ms", "payload", "payload_blob", "metadata", "created_at")


class RolloutRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def get(self, workspace_id: str, rollout_id: str, *, for_update: bool = False) -> Rollout | None:
        query = select(Rollout).where(Rollout.id == rollout_id, Rollout.workspace_id == workspace_id)
        return self.session.scalar(query.with_for_update() if for_update else query)

    def get_by_attempt(self, workspace_id: str, run_id: str, attempt: int) -> Rollout | None:
        return self.session.scalar(
            select(Rollout).where(Rollout.run_id == run_id, Rollout.attempt == attempt,
                                  Rollout.workspace_id == workspace_id)
        )

    def get_by_client_key(self, run_id: str, client_key: str) -> Rollout | None:
        return self.session.scalar(select(Rollout).where(Rollout.run_id == run_id, Rollout.client_key == client_key))

    def lock_many(self, workspace_id: str, rollout_ids: Sequence[str]) -> dict[str, Rollout]:
        """Lock rollouts in ID order so concurrent batches never deadlock."""
        rows = self.session.scalars(
            select(Rollout)
            .where(Rollout.id.in_(sorted(set(rollout_ids))), Rollout.workspace_id == workspace_id)
            .order_by(Rollout.id)
            .with_for_update()
        )
        return {r.id: r for r in rows}

    def add(self, rollout: Rollout) -> Rollout:
        self.session.add(rollout)
        self.session.flush()
        return rollout

    def context_of(self, rollouts: Sequence[Rollout]) -> tuple[dict[str, Run], dict[str, str]]:
        """The runs and task keys a list of rollouts needs for its wire form, in two queries."""
        run_ids = {r.run_id for r in rollouts}
        task_ids = {r.task_id for r in rollouts if r.task_id}
        runs = {run.id: run for run in self.session.scalars(select(Run).where(Run.id.in_(run_ids)))} if run_ids else {}
        keys = dict(self.session.execute(select(Task.id, Task.key).where(Task.id.in_(task_ids))).all()) \
            if task_ids else {}
        return runs, keys

    def filtered(self, workspace_id: str, filters: dict[str, Any]) -> Select[Any]:
        """Rollouts of the workspace matching `filters` (run fields join the run; text searches output and error)."""
        query = select(Rollout).where(Rollout.workspace_id == workspace_id)
        run_filters = {name: filters[name] for name in RUN_FILTERS if filters.get(name) is not None}
        if run_filters or filters.get("group_by") in GROUP_BY_RUN:
            query = query.join(Run, Run.id == Rollout.run_id)
            for name, value in run_filters.items():
                query = query.where(getattr(Run, name) == value)
        for column in ("run_id", "task_id", "status", "step", "group_key"):
            if filters.get(column) is not None:
                query = query.where(getattr(Rollout, column) == filters[column])
        if filters.get("statuses"):
            query = query.where(Rollout.status.in_(list(filters["statuses"])))
        if filters.get("started_after") is not None:
            query = query.where(Rollout.started_at >= filters["started_after"])
        if filters.get("started_before") is not None:
            query = query.where(Rollout.started_at < filters["started_before"])
        if filters.get("reward_min") is not None:
            query = query.where(Rollout.reward >= filters["reward_min"])
        if filters.get("reward_max") is not None:
            query = query.where(Rollout.reward <= filters["reward_max"])
        if filters.get("search"):
            pattern = "%" + filters["search"].replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            query = query.where(or_(cast(Rollout.output, Text).ilike(pattern, escape="\\"),
                                    Rollout.error.ilike(pattern, escape="\\")))
        return query

    def list_page(self, workspace_id: str, *, filters: dict[str, Any], before: tuple[datetime, str] | None,
                  limit: int) -> list[Rollout]:
        query = self.filtered(workspace_id, filters)
        if before is not None:
            query = query.where(
                (Rollout.started_at < before[0]) | ((Rollout.started_at == before[0]) & (Rollout.id < before[1]))
            )
        return list(self.session.scalars(query.order_by(Rollout.started_at.desc(), Rollout.id.desc()).limit(limit)))

    def group_stats(self, workspace_id: str, filters: dict[str, Any], group_by: str,
                    limit: int = 200) -> list[dict[str, Any]]:
        """Per group: count, finished and succeeded counts, mean reward, tokens, cost, p50/p95 latency
        (nearest rank). PostgreSQL computes the percentiles in the same pass (`percentile_disc`, an
        ordered-set aggregate); SQLite has none, so there a window function ranks the latencies."""
        key = _group_column(group_by)
        postgres = self.session.get_bind().dialect.name == "postgresql"
        columns = [
            key.label("k"),
            func.count().label("n"),
            func.sum(case((Rollout.status == "succeeded", 1), else_=0)).label("ok"),
            func.sum(case((Rollout.status == "running", 0), else_=1)).label("done"),
            func.avg(Rollout.reward).label("reward"),
            func.coalesce(func.sum(Rollout.input_tokens + Rollout.output_tokens), 0).label("tokens"),
            func.coalesce(func.sum(Rollout.cost), 0.0).label("cost"),
        ]
        if postgres:
            columns += [func.percentile_disc(0.5).within_group(Rollout.latency_ms).label("p50"),
                        func.percentile_disc(0.95).within_group(Rollout.latency_ms).label("p95")]
        rows = self.filtered(workspace_id, {**filters, "group_by": group_by}).with_only_columns(
            *columns).group_by(key).order_by(func.count().desc()).limit(limit)
        groups = []
        for row in self.session.execute(rows):
            groups.append({
                "key": row.k, "count": int(row.n), "succeeded": int(row.ok or 0), "finished": int(row.done or 0),
                "mean_reward": _float(row.reward), "tokens": int(row.tokens or 0), "cost": float(row.cost or 0.0),
                "latency_p50_ms": _float(row.p50) if postgres else None,
                "latency_p95_ms": _float(row.p95) if postgres else None,
            })
        if postgres:
            return groups
        ranked = (
            self.filtered(workspace_id, {**filters, "group_by": group_by})
            .where(Rollout.latency_ms.is_not(None))
            .with_only_columns(
                key.label("k"), Rollout.latency_ms.label("latency"),
                func.row_number().over(partition_by=key, order_by=Rollout.latency_ms).label("rn"),
                func.count().over(partition_by=key).label("total"),
            )
            .subquery()
        )
        by_key = {g["key"]: g for g in groups}
        points = self.session.execute(
            select(ranked.c.k, ranked.c.latency, ranked.c.rn, ranked.c.total).where(
                or_(ranked.c.rn == (ranked.c.total + 1) // 2, ranked.c.rn == (ranked.c.total * 95 + 99) // 100)
            )
        )
        for k, latency, rn, total in points:
            group = by_key.get(k)
            if group is None:
                continue
            if rn == (total + 1) // 2:
                group["latency_p50_ms"] = latency
            if rn == (total * 95 + 99) // 100:
                group["latency_p95_ms"] = latency
        return groups

    def attempts_on_task(self, run_id: str, rollout: Rollout) -> list[tuple[str, int]]:
        """(id, attempt) of the run's rollouts on the same task (or group key), by attempt."""
        query = select(Rollout.id, Rollout.attempt).where(Rollout.run_id == run_id)
        if rollout.task_id is not None:
            query = query.where(Rollout.task_id == rollout.task_id)
        elif rollout.group_key is not None:
            query = query.where(Rollout.group_key == rollout.group_key)
        else:
            query = query.where(Rollout.id == rollout.id)
        return [(rid, attempt) for rid, attempt in self.session.execute(query.order_by(Rollout.attempt))]

    def list_for_run(self, run_id: str, *, status: str | None = None, search: str | None = None,
                     step: int | None = None, order: str = "attempt", descending: bool = False,
                     limit: int = 500, offset: int = 0) -> list[Rollout]:
        """A run's rollouts for its table, sorted by a column; `search` matches task keys and group keys."""
        query = select(Rollout).where(Rollout.run_id == run_id)
        if status:
            query = query.where(Rollout.status == status)
        if step is not None:
            query = query.where(Rollout.step == step)
        if search:
            keys = select(Task.id).where(Task.key.ilike(f"%{search}%"))
            query = query.where(or_(Rollout.task_id.in_(keys), Rollout.group_key.ilike(f"%{search}%")))
        sort = {
            "attempt": Rollout.attempt, "reward": Rollout.reward, "latency": Rollout.latency_ms,
            "tokens": Rollout.input_tokens + Rollout.output_tokens, "cost": Rollout.cost, "status": Rollout.status,
            "task": Rollout.task_id,
        }.get(order, Rollout.attempt)
        ordered = sort.desc().nulls_last() if descending else sort.asc().nulls_last()
        return list(self.session.scalars(query.order_by(ordered, Rollout.attempt).limit(limit).offset(offset)))

    def step_summaries(self, run_id: str) -> list[dict[str, Any]]:
        """Training steps of a run: sample count, mean reward, discarded count, mean tokens."""
        rows = self.session.execute(
            select(
                Rollout.step, func.count(), func.avg(Rollout.reward),
                func.sum(case((Rollout.discarded.is_(True), 1), else_=0)),
                func.avg(Rollout.input_tokens + Rollout.output_tokens), func.min(Rollout.reward),
                func.max(Rollout.reward),
            ).where(Rollout.run_id == run_id, Rollout.step.is_not(None)).group_by(Rollout.step).order_by(Rollout.step)
        )
        # avg() of integers is NUMERIC on PostgreSQL (Decimal in Python): floats for both dialects.
        return [{"step": step, "count": int(n), "mean_reward": _float(reward), "discarded": int(dropped or 0),
                 "mean_tokens": _float(tokens), "min_reward": _float(low), "max_reward": _float(high)}
                for step, n, reward, dropped, tokens, low, high in rows]

    def failed_task_count(self, run_id: str, statuses: Sequence[str] = ("failed", "errored")) -> int:
        return int(self.session.scalar(
            select(func.count(func.distinct(Rollout.task_id))).where(Rollout.run_id == run_id,
                                                                     Rollout.status.in_(list(statuses)))
        ) or 0)

    def has_steps(self, run_id: str) -> bool:
        return self.session.scalar(
            select(Rollout.id).where(Rollout.run_id == run_id, Rollout.step.is_not(None)).limit(1)
        ) is not None

    def reward_groups(self, run_id: str) -> list[tuple[str, str, float | None]]:
        """(rollout id, group — task or group key —, reward) of every rollout of a run: what advantages need."""
        rows = self.session.execute(
            select(Rollout.id, Rollout.task_id, Rollout.group_key, Rollout.reward).where(Rollout.run_id == run_id)
        )
        return [(rid, task_id or group_key or rid, reward) for rid, task_id, group_key, reward in rows]

    def rewards_of_run(self, run_id: str) -> list[float]:
        return list(self.session.scalars(
            select(Rollout.reward).where(Rollout.run_id == run_id, Rollout.reward.is_not(None))
        ))

    # -- events -------------------------------------------------------------------------------------------

    def insert_new_events(self, rows: list[dict[str, Any]]) -> set[tuple[str, str]]:
        """Insert event rows (keys: EVENT_COLUMNS) skipping stored (rollout, event id) pairs; returns the pairs
        inserted. The caller holds the batch's rollout locks."""
        return insert_returning_new(self.session, TraceEvent.__table__, EVENT_COLUMNS, rows,  # type: ignore[arg-type]
                                    ["rollout_id", "event_id"])  # type: ignore[return-value]

    def events_page(self, rollout_id: str, *, after: tuple[int, int] | None, limit: int) -> list[TraceEvent]:
        query = select(TraceEvent).where(TraceEvent.rollout_id == rollout_id)
        if after is not None:
            query = query.where(
                (TraceEvent.seq > after[0]) | ((TraceEvent.seq == after[0]) & (TraceEvent.pk > after[1]))
            )
        return list(self.session.scalars(query.order_by(TraceEvent.seq, TraceEvent.pk).limit(limit)))

    def events_by_call_ids(self, rollout_id: str, kind: str, call_ids: Sequence[str]) -> list[TraceEvent]:
        """The rollout's tool calls or tool results with these call ids (pairs a call with its result
        when they fall on different pages of a long trace)."""
        if not call_ids:
            return []
        return list(self.session.scalars(
            select(TraceEvent).where(TraceEvent.rollout_id == rollout_id, TraceEvent.kind == kind,
                                     TraceEvent.payload["call_id"].as_string().in_(list(set(call_ids))))
            .order_by(TraceEvent.seq, TraceEvent.pk)
        ))

    def events_by_ids(self, rollout_id: str, event_ids: Sequence[str]) -> list[TraceEvent]:
        if not event_ids:
            return []
        return list(self.session.scalars(
            select(TraceEvent).where(TraceEvent.rollout_id == rollout_id, TraceEvent.event_id.in_(list(set(event_ids))))
        ))

    def event_by_id(self, rollout_id: str, event_id: str) -> TraceEvent | None:
        return self.session.scalar(
            select(TraceEvent).where(TraceEvent.rollout_id == rollout_id, TraceEvent.event_id == event_id)
        )

    # -- scores -------------------------------------------------------------------------------------------

    def add_score(self, score: Score) -> Score:
        self.session.add(score)
        self.session.flush()
        return score

    def score_by_client_id(self, rollout_id: str, client_id: str) -> Score | None:
        return self.session.scalar(select(Score).where(Score.rollout_id == rollout_id, Score.client_id == client_id))

    def scores_of(self, rollout_ids: Sequence[str]) -> dict[str, list[Score]]:
        found: dict[str, list[Score]] = {rid: [] for rid in rollout_ids}
        if rollout_ids:
            for score in self.session.scalars(
                select(Score).where(Score.rollout_id.in_(list(rollout_ids))).order_by(Score.created_at, Score.id)
            ):
                found[score.rollout_id].append(score)
        return found
