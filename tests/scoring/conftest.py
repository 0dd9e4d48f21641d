"""Fixtures for scoring tests: Python scorers installed as real `rollout.scorers` entry points (a dist-info folder on
sys.path, as pip would leave it), a background worker over the test's context, and a small seeded run."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from rollout_server.context import AppContext
from rollout_server.scoring.worker import Worker

SCORERS_MODULE = '''
"""Python scorers used by the tests, registered as entry points of the rollout.scorers group."""
import os
import time

_seen = {}


def boom(item, config):
    raise RuntimeError("the boom scorer always fails")


def slow(item, config):
    time.sleep(float(config.get("sleep", 0.02)))
    path = os.environ.get("FAKE_SCORER_LOG")
    if path:
        with open(path, "a") as handle:
            handle.write(item.rollout["id"] + "\\n")
    return {"value": 1.0, "comment": "slow but sure"}


def flaky(item, config):
    count = _seen.get(item.rollout["id"], 0) + 1
    _seen[item.rollout["id"]] = count
    if count < int(config.get("fail_times", 1)):
        raise ConnectionError(f"flaky failure {count}")
    return [{"name": "flaky", "value": float(count)}]


def answer_length(item, config):
    return len(str(item.answer() or "")) / float(config.get("scale", 10))


class AtLeast:
    def __init__(self, minimum=1):
        self.minimum = minimum

    def __call__(self, item):
        return len(item.events) >= self.minimum
'''

ENTRY_POINTS = """
[rollout.scorers]
boom = fake_rollout_scorers:boom
slow = fake_rollout_scorers:slow
flaky = fake_rollout_scorers:flaky
answer_length = fake_rollout_scorers:answer_length
at_least_events = fake_rollout_scorers:AtLeast
"""


def install_fake_scorers(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "fake_rollout_scorers.py").write_text(textwrap.dedent(SCORERS_MODULE))
    info = folder / "fake_rollout_scorers-0.1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-rollout-scorers\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    return folder


@pytest.fixture(scope="session")
def fake_scorers_path(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = install_fake_scorers(tmp_path_factory.mktemp("scorers"))
    sys.path.insert(0, str(folder))
    yield folder
    sys.path.remove(str(folder))


@pytest.fixture
def worker(ctx: AppContext, fake_scorers_path: Path) -> Iterator[Worker]:
    """A worker over the test's context; not started: call drain(), or start() for the background."""
    ctx.settings.scoring_retry_seconds = 0.0
    runner = Worker(ctx, worker_id="test-worker", concurrency=4, poll_seconds=0.02)
    yield runner
    runner.stop()
