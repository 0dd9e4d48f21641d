"""Per-run aggregates of every numeric score, of the reward and of the advantage: what NeMo Gym prints after a
collection, computed by the database (one grouped query)."""

from __future__ import annotations

import math
from typing import Any

from sqlalchemy import case, func, select
from sqlalchemy.orm import Session

from ..models import Rollout, Run, Score


def _stat(count: Any, mean: Any, low: Any, high: Any, mean_sq: Any) -> dict[str, Any] | None:
    if not count:
        return None
    variance = max(0.0, float(mean_sq) - float(mean) ** 2)
    return {"count": int(count), "mean": float(mean), "std": math.sqrt(variance), "min": float(low),
            "max": float(high)}


def _aggregates(column: Any) -> list[Any]:
    return [func.count(column), func.avg(column), func.min(column), func.max(column), func.avg(column * column)]


def run_metrics(session: Session, run: Run, *, include_discarded: bool = True) -> dict[str, Any]:
    base = [Rollout.run_id == run.id]
    if not include_discarded:
        base.append(Rollout.discarded.is_(False))
    scores: dict[str, Any] = {}
    errors: dict[str, int] = {}
    rows = session.execute(
        select(Score.name, *_aggregates(Score.numeric_value))
        .join(Rollout, Rollout.id == Score.rollout_id).where(*base, Score.numeric_value.is_not(None))
        .group_by(Score.name).order_by(Score.name)
    )
    for name, *values in rows:
        stat = _stat(*values)
        if stat:
            scores[name] = stat
    for name, count in session.execute(
        select(Score.name, func.count()).join(Rollout, Rollout.id == Score.rollout_id)
        .where(*base, Score.data_type == "error").group_by(Score.name).order_by(Score.name)
    ):
        errors[name] = int(count)
    row = session.execute(
        select(func.count(), func.sum(case((Rollout.discarded.is_(True), 1), else_=0)), *_aggregates(Rollout.reward),
               *_aggregates(Rollout.advantage)).where(*base)
    ).one()
    return {
        "rollout_count": int(row[0] or 0),
        "discarded_count": int(row[1] or 0),
        "reward": _stat(*row[2:7]),
        "advantage": _stat(*row[7:12]),
        "scores": scores,
        "errors": errors,
    }
