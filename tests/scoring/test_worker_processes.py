"""Two `rollout-server worker` processes on one PostgreSQL drain one queue without scoring anything twice."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select

from rollout_server.context import AppContext
from rollout_server.models import Job, Score
from tests.conftest import create_tenant, make_settings
from tests.scoring.helpers import make_run
from tests.support.postgres import PostgresServer

pytestmark = pytest.mark.postgres


@pytest.fixture
def pg_url(postgres_server: PostgresServer, postgres_template: str) -> Iterator[str]:
    name = f"t_{uuid.uuid4().hex[:12]}"
    yield postgres_server.create_database(name, template=postgres_template)
    postgres_server.drop_database(name)


@pytest.fixture
def pg_ctx(pg_url: str, tmp_path: Path) -> Iterator[AppContext]:
    context = AppContext.from_settings(make_settings(pg_url, tmp_path / "data"))
    yield context
    context.close()


@pytest.fixture
async def pg_client(pg_ctx: AppContext) -> AsyncIterator[httpx.AsyncClient]:
    from rollout_server.app import create_app

    _, secret = create_tenant(pg_ctx)
    transport = httpx.ASGITransport(app=create_app(context=pg_ctx))
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver",
                                 headers={"authorization": f"Bearer {secret}"}) as client:
        yield client


async def test_two_worker_processes_share_one_queue(pg_url: str, pg_ctx: AppContext, pg_client: httpx.AsyncClient,
                                                    fake_scorers_path: Path, tmp_path: Path) -> None:
    _run, rollouts = await make_run(pg_client, tasks=20, repeats=6, scorers=[
        {"name": "slow", "type": "slow", "config": {"sleep": 0.03}},
        {"name": "correct", "type": "exact_match", "config": {}},
    ])
    assert len(rollouts) == 120
    log = tmp_path / "calls.log"
    env = {**os.environ, "ROLLOUT_DATABASE_URL": pg_url, "ROLLOUT_DATA_DIR": str(tmp_path / "w"),
           "PYTHONPATH": os.pathsep.join([str(fake_scorers_path), os.environ.get("PYTHONPATH", "")]),
           "FAKE_SCORER_LOG": str(log)}
    workers = [
        subprocess.Popen([sys.executable, "-m", "rollout_server.cli", "worker", "--once", "--concurrency", "3",
                          "--id", f"w{i}"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        for i in range(2)
    ]
    outputs = []
    for process in workers:
        out, _ = process.communicate(timeout=240)
        outputs.append(out.decode())
        assert process.returncode == 0, out.decode()

    calls = Counter(log.read_text().split())
    assert len(calls) == 120 and set(calls.values()) == {1}, "a rollout was scored twice (or not at all)"
    with pg_ctx.db.reading() as session:
        by_worker = dict(session.execute(select(Job.locked_by, func.count()).where(Job.status == "done")
                                         .group_by(Job.locked_by)).all())
        assert session.scalar(select(func.count()).select_from(Job).where(Job.status != "done")) == 0
        per_source = dict(session.execute(select(Score.source, func.count()).group_by(Score.source)).all())
    assert sum(by_worker.values()) == 120
    assert set(by_worker) == {"w0", "w1"}, f"both workers should have taken jobs: {by_worker}\n{outputs}"
    assert per_source == {"slow": 120, "correct": 120}
