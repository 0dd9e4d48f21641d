"""Server time of the web UI's heaviest pages on PostgreSQL: the first screen of a 10,000-event rollout and
a filtered Traces page over 1,000,000 rollouts.

Starts a throwaway PostgreSQL, migrates it, bulk-loads the rows with COPY (a workspace, 1,000 runs over 10
workflows and 5 agents, 1,000,000 rollouts over 30 days, one rollout with 10,000 trace events), signs in
through the login form, and times each page in-process over ASGI (no network: the time is the server's),
median and p95 of repeated requests after a warm-up.

    python bench/ui.py                  # 1,000,000 rollouts (about two minutes to load on 2 cores)
    python bench/ui.py --rollouts 100000 --repeat 10
"""

from __future__ import annotations

import argparse
import asyncio
import io
import random
import re
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import psycopg
from _common import ROOT, libpq_url, machine_summary, percentile, print_table, start_postgres

sys.path.insert(0, str(ROOT / "src"))

from rollout_server.app import create_app
from rollout_server.auth.passwords import hash_password
from rollout_server.config import Settings
from rollout_server.context import AppContext
from rollout_server.db.migrate import upgrade

TARGETS_MS = {"rollout": 300.0, "traces": 150.0}
WORKFLOWS = [f"workflow-{i}" for i in range(10)]
AGENTS = [f"agent-{i}" for i in range(5)]
STATUSES = ["succeeded"] * 80 + ["failed"] * 12 + ["errored"] * 5 + ["running"] * 3
PASSWORD = "bench-password-123"


def _copy(conn: psycopg.Connection, table: str, columns: list[str], lines: io.StringIO) -> None:
    lines.seek(0)
    with conn.cursor() as cur, cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
        while chunk := lines.read(1 << 20):
            copy.write(chunk)


def load(url: str, rollouts: int, events: int) -> dict[str, object]:
    """Bulk-load the data set; returns the ids the pages need."""
    rng = random.Random(7)
    now = datetime.now(UTC)
    ws, user = "ws_bench", "user_bench"
    run_count = 1000
    per_run = max(1, rollouts // run_count)
    with psycopg.connect(libpq_url(url), autocommit=False) as conn:
        conn.execute("INSERT INTO workspaces (id, name, next_run_number, created_at) VALUES (%s, 'bench', %s, now())",
                     (ws, run_count + 1))
        conn.execute("INSERT INTO users (id, email, name, password_hash, is_superuser, created_at) "
                     "VALUES (%s, 'bench@rollout.local', 'Bench', %s, false, now())", (user, hash_password(PASSWORD)))
        conn.execute("INSERT INTO memberships (workspace_id, user_id, role, created_at) "
                     "VALUES (%s, %s, 'owner', now())", (ws, user))
        buf = io.StringIO()
        for number in range(1, run_count + 1):
            created = now - timedelta(days=30) + timedelta(minutes=number * 43)
            buf.write(f"run_{number:08d}\t{ws}\t{number}\t{WORKFLOWS[number % 10]}\t{AGENTS[number % 5]}\tmodel-x\t"
                      f"1\treward\tfinished\t{created.isoformat()}\t{per_run + 1}\n")
        _copy(conn, "runs", ["id", "workspace_id", "number", "workflow_name", "agent_name", "model", "num_repeats",
                             "reward_score", "status", "created_at", "next_attempt"], buf)
        columns = ["id", "workspace_id", "run_id", "attempt", "repeat_index", "status", "output", "error", "reward",
                   "discarded", "started_at", "ended_at", "latency_ms", "input_tokens", "output_tokens", "cost",
                   "event_count", "last_seq"]
        start = time.perf_counter()
        written = 0
        for number in range(1, run_count + 1):
            buf = io.StringIO()
            base = now - timedelta(days=30) + timedelta(minutes=number * 43)
            for attempt in range(1, per_run + 1):
                status = rng.choice(STATUSES)
                started = base + timedelta(seconds=attempt * 2.5)
                latency = rng.lognormvariate(7.5, 0.6)
                output = "\\N" if status in ("running", "errored") else f'"answer {rng.randrange(10**6)}"'
                error = f"tool timeout after {rng.randrange(60)} s" if status in ("failed", "errored") else "\\N"
                reward = "\\N" if status == "running" else f"{rng.random():.4f}"
                ended = "\\N" if status == "running" else (started + timedelta(milliseconds=latency)).isoformat()
                buf.write(f"ro_{number:06d}{attempt:06d}\t{ws}\trun_{number:08d}\t{attempt}\t0\t{status}\t{output}\t"
                          f"{error}\t{reward}\tf\t{started.isoformat()}\t{ended}\t{latency:.1f}\t"
                          f"{rng.randrange(200, 4000)}\t{rng.randrange(20, 800)}\t{rng.random() / 100:.6f}\t12\t12\n")
                written += 1
            _copy(conn, "rollouts", columns, buf)
            if number % 100 == 0:
                print(f"  {written:,} rollouts loaded ({time.perf_counter() - start:.0f} s)", flush=True)
        # The long trace: run 1001 with one rollout of `events` events (spans, calls, tool pairs, messages).
        conn.execute("INSERT INTO runs (id, workspace_id, number, workflow_name, agent_name, num_repeats, "
                     "reward_score, status, created_at, next_attempt) "
                     "VALUES ('run_long', %s, %s, 'long', 'agent-0', 1, 'reward', 'finished', now(), 2)",
                     (ws, run_count + 1))
        conn.execute("INSERT INTO rollouts (id, workspace_id, run_id, attempt, repeat_index, status, discarded, "
                     "started_at, input_tokens, output_tokens, cost, event_count, last_seq) VALUES ('ro_long', %s, "
                     "'run_long', 1, 0, 'succeeded', false, %s, 0, 0, 0, %s, %s)", (ws, now, events, events))
        buf = io.StringIO()
        for seq in range(1, events + 1):
            at = now + timedelta(milliseconds=seq * 40)
            kind = ("span", "message", "tool_call", "tool_result", "llm_call", "reasoning")[seq % 6]
            parent = f"e{(seq // 60) * 60}" if seq % 60 else "\\N"
            if kind == "message":
                body = f'{{"role": "assistant", "content": "Step {seq}: I will **check** the file and run the tests."}}'
            elif kind == "tool_call":
                body = f'{{"call_id": "c{seq}", "arguments": {{"cmd": "pytest -k test_{seq}"}}}}'
            elif kind == "tool_result":
                body = f'{{"call_id": "c{seq - 1}", "output": "{seq} passed in 0.4s", "is_error": false}}'
            elif kind == "llm_call":
                body = ('{"model": "model-x", "usage": {"input_tokens": 900, "output_tokens": 80}, "cost": 0.001, '
                        '"output": [{"role": "assistant", "content": "ok"}]}')
            elif kind == "reasoning":
                body = '{"content": "Think about which test to run next."}'
            else:
                body = "{}"
            ended = (at + timedelta(milliseconds=30)).isoformat()
            buf.write(f"ro_long\te{seq}\t{seq}\t{kind}\t{parent}\t{'shell' if kind == 'tool_call' else kind}\t"
                      f"{at.isoformat()}\t{ended}\t30\t{body}\t{now.isoformat()}\n")
        _copy(conn, "trace_events", ["rollout_id", "event_id", "seq", "kind", "parent_id", "name", "started_at",
                                     "ended_at", "duration_ms", "payload", "created_at"], buf)
        conn.commit()
    with psycopg.connect(libpq_url(url), autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
    return {"workspace_id": ws, "long_run": run_count + 1}


async def measure(app: object, ws: str, long_run: int, repeat: int) -> list[tuple[str, str, list[float], int]]:
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
        login = await client.get("/login")
        token = re.search(r'name="csrf_token" value="([^"]+)"', login.text).group(1)  # type: ignore[union-attr]
        signed = await client.post("/login", data={"email": "bench@rollout.local", "password": PASSWORD,
                                                   "csrf_token": token})
        assert signed.status_code == 303, signed.text[:300]
        first = await client.get(f"/w/{ws}/runs/{long_run}/rollouts/1")
        cursor = re.search(r'hx-get="([^"]+cursor=[^"]+)"', first.text).group(1).replace("&amp;", "&")  # type: ignore[union-attr]
        cases = [
            ("rollout", "10,000-event rollout, first screen (story)", f"/w/{ws}/runs/{long_run}/rollouts/1"),
            ("rollout", "10,000-event rollout, next 100 events (HTMX)", cursor),
            ("rollout", "10,000-event rollout, Gantt first screen", f"/w/{ws}/runs/{long_run}/rollouts/1?view=gantt"),
            ("traces", "Traces, status=failed + workflow", f"/w/{ws}/traces?status=failed&workflow=workflow-3"),
            ("traces", "Traces, agent + reward ≥ 0.9 + last 7 days",
             f"/w/{ws}/traces?agent=agent-2&reward_min=0.9&since=7d"),
            ("traces", "Traces, no filter (newest 50)", f"/w/{ws}/traces"),
            ("traces", "Traces, page 2 (keyset cursor)", None),
            ("other", "Traces, text search in outputs and errors", f"/w/{ws}/traces?q=timeout+after+59&since=24h"),
            ("other", "Traces, grouped by workflow, last 24 h", f"/w/{ws}/traces?group=workflow&since=24h"),
            ("other", "Traces, grouped by workflow, all 1M", f"/w/{ws}/traces?group=workflow"),
        ]
        results = []
        for target, label, path in cases:
            if path is None:
                listing = await client.get(f"/w/{ws}/traces")
                path = re.search(r'href="\?([^"]*cursor=[^"]+)"', listing.text).group(1)  # type: ignore[union-attr]
                path = f"/w/{ws}/traces?" + path.replace("&amp;", "&")
            times = []
            size = 0
            runs = repeat if "all 1M" not in label else max(3, repeat // 5)
            for index in range(runs + 2):
                started = time.perf_counter()
                response = await client.get(path)
                elapsed = (time.perf_counter() - started) * 1000
                assert response.status_code == 200, f"{path}: {response.status_code} {response.text[:300]}"
                size = len(response.content)
                if index >= 2:  # two warm-ups
                    times.append(elapsed)
            results.append((target, label, times, size))
        return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rollouts", type=int, default=1_000_000)
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    print(machine_summary(), flush=True)
    server = start_postgres()
    try:
        url = server.create_database(f"bench_ui_{uuid.uuid4().hex[:8]}")
        upgrade(url)
        started = time.perf_counter()
        ids = load(url, args.rollouts, args.events)
        print(f"loaded {args.rollouts:,} rollouts and a {args.events:,}-event trace in "
              f"{time.perf_counter() - started:.0f} s", flush=True)
        with tempfile.TemporaryDirectory() as data_dir:
            settings = Settings(data_dir=Path(data_dir), database_url=url, demo=False, auto_migrate=False,
                                public_url="http://bench", secret_key="bench-secret")
            ctx = AppContext.from_settings(settings)
            app = create_app(context=ctx)
            results = asyncio.run(measure(app, str(ids["workspace_id"]), int(ids["long_run"]), args.repeat))
            ctx.close()
    finally:
        server.stop()
    rows = []
    for target, label, times, size in results:
        goal = TARGETS_MS.get(target)
        median = statistics.median(times)
        verdict = "" if goal is None else ("✓" if median <= goal else "✗")
        rows.append([label, f"{median:.0f}", f"{percentile(times, 95):.0f}", f"{size / 1024:.0f} KiB",
                     f"≤ {goal:.0f} ms {verdict}" if goal else "—"])
    print()
    print_table(["page (PostgreSQL, server time over ASGI)", "median ms", "p95 ms", "HTML", "target"], rows)


if __name__ == "__main__":
    main()
