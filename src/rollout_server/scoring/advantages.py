"""Group-relative advantages (GRPO and its variants) and the discards that go with them.

A group is the rollouts of one task within a run and training step — or those sharing an explicit group key.
For reward r in group g:

- `grpo`:     (r - mean_g) / (std_g + ε)          as in DeepSeekMath's GRPO
- `dr_grpo`:  r - mean_g                           Dr. GRPO: no std scaling
- `batch`:    (r - mean_g) / (std_batch + ε)       std over every scored reward of the batch

std is the sample standard deviation (ddof=1, what torch.std, TRL and verl use) unless `std_ddof=0`; a group of
one has std 0. Only finished, scored, not-manually-discarded rollouts enter the statistics.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from ..models import Rollout, Run

ZERO_VARIANCE = "zero reward variance in group"
ERRORED = "rollout errored"
UNSCORED = "no reward"
AUTO_REASONS = (ZERO_VARIANCE, ERRORED, UNSCORED)


def _std(values: Sequence[float], ddof: int) -> float:
    if len(values) <= ddof:
        return 0.0
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - ddof))


def group_advantages(groups: dict[Hashable, list[tuple[str, float]]], normalization: str, epsilon: float,
                     ddof: int = 1) -> dict[str, float]:
    """Advantage per rollout id, for groups of (id, reward)."""
    batch_std = _std([r for members in groups.values() for _, r in members], ddof)
    out: dict[str, float] = {}
    for members in groups.values():
        rewards = [r for _, r in members]
        mean = sum(rewards) / len(rewards)
        if normalization == "dr_grpo":
            scale = 1.0
        elif normalization == "batch":
            scale = batch_std + epsilon
        else:
            scale = _std(rewards, ddof) + epsilon
        for rollout_id, reward in members:
            out[rollout_id] = (reward - mean) / scale
    return out


def zero_variance(rewards: Sequence[float], tolerance: float = 1e-12) -> bool:
    return max(rewards) - min(rewards) <= tolerance


def group_of(row: Any, group_by: str) -> Hashable:
    if group_by == "task":
        key = row.task_id or row.id
    elif group_by == "group_key":
        key = row.group_key or row.id
    else:
        key = row.group_key or row.task_id or row.id
    return (row.step, key)


@dataclass
class AdvantageSummary:
    rollouts: int
    scored: int
    groups: int
    discarded_zero_variance: int
    discarded_errored: int
    discarded_unscored: int
    mean_reward: float | None
    std_reward: float | None


def compute_for_run(session: Session, run: Run, *, normalization: str = "grpo", epsilon: float = 1e-6,
                    std_ddof: int = 1, group_by: str = "auto", discard_zero_variance: bool = True,
                    discard_statuses: Sequence[str] = ("errored",), discard_unscored: bool = False) -> AdvantageSummary:
    """Write `advantage` on every rollout of the run and (re)set the automatic discards; manual discards stay."""
    rows = session.execute(
        select(Rollout.id, Rollout.task_id, Rollout.group_key, Rollout.step, Rollout.status, Rollout.reward,
               Rollout.discarded, Rollout.discard_reason).where(Rollout.run_id == run.id)
    ).all()
    updates: dict[str, dict[str, Any]] = {}
    groups: dict[Hashable, list[tuple[str, float]]] = defaultdict(list)
    counts = {"errored": 0, "unscored": 0, "zero": 0}
    for row in rows:
        manual = row.discarded and row.discard_reason not in AUTO_REASONS
        change: dict[str, Any] = {"id": row.id, "advantage": None}
        if not manual:
            change.update(discarded=False, discard_reason=None)
        updates[row.id] = change
        if manual or row.status == "running":
            continue
        if row.status in discard_statuses:
            counts["errored"] += 1
            change.update(discarded=True, discard_reason=ERRORED)
            continue
        if row.reward is None:
            if discard_unscored:
                counts["unscored"] += 1
                change.update(discarded=True, discard_reason=UNSCORED)
            continue
        groups[group_of(row, group_by)].append((row.id, float(row.reward)))

    advantages = group_advantages(groups, normalization, epsilon, std_ddof)
    for members in groups.values():
        flat = discard_zero_variance and zero_variance([r for _, r in members])
        for rollout_id, _ in members:
            updates[rollout_id]["advantage"] = advantages[rollout_id]
            if flat:
                counts["zero"] += 1
                updates[rollout_id].update(discarded=True, discard_reason=ZERO_VARIANCE)
    values = list(updates.values())
    for start in range(0, len(values), 1000):
        chunk = values[start:start + 1000]
        # Rows differ in which keys they set (manual discards keep theirs): one executemany per shape.
        for keys in {tuple(sorted(v)) for v in chunk}:
            session.execute(update(Rollout), [v for v in chunk if tuple(sorted(v)) == keys])
    session.flush()
    rewards = [r for members in groups.values() for _, r in members]
    return AdvantageSummary(
        rollouts=len(rows), scored=len(rewards), groups=len(groups), discarded_zero_variance=counts["zero"],
        discarded_errored=counts["errored"], discarded_unscored=counts["unscored"],
        mean_reward=sum(rewards) / len(rewards) if rewards else None,
        std_reward=_std(rewards, 0) if rewards else None,
    )
