"""Sustained ingestion through `POST /api/v1/ingest` on PostgreSQL and SQLite, against raw PostgreSQL COPY.

Starts its own throwaway PostgreSQL and a real uvicorn process per database, creates a run and rollouts
through the REST API, then has concurrent clients post pre-encoded batches of message events as fast as
the server answers. Reports events/s, requests/s, p50/p99 latency, CPU used by server, database and load
generator, and the server's peak RSS; checks the server holds exactly the events sent; and, in the same
run, COPYs the same rows into a fresh migrated database as the ceiling.

    python bench/ingest.py                       # 200,000 events per database, 8 clients x 500 events
    python bench/ingest.py --only postgres --workers 2
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import sqlite3
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from _common import (
    PostgresServer,
    Service,
    TreeSampler,
    busy_seconds,
    libpq_url,
    machine_summary,
    percentile,
    postmaster_pid,
    print_table,
    start_postgres,
    start_service,
)

TARGETS = {"postgres": 20_000, "sqlite": 10_000}  # events/s on a 2-core machine, issue 2
INGEST = "/api/v1/ingest"
FILLER = "The quick brown fox jumps over the lazy dog while the agent reasons step by step. " * 8


# -- the workload -------------------------------------------------------------------------------------------

@dataclass
class Event:
    slot: int  # which of the run's rollouts (index into the rollout id list)
    event_id: str
    seq: int
    payload: dict[str, Any]


def content_for(n: int, event_bytes: int) -> str:
    # The encoded event ({"rollout_id": "ro_…", "id", "kind", "role", "content", "seq"}) is ~130 bytes
    # of envelope; the content makes up the rest.
    size = max(8, event_bytes - 130)
    text = f"{n:09d} " + FILLER
    while len(text) < size:
        text += FILLER
    return text[:size]


def plan(clients: int, per_client: int, batch: int, rollouts_per_client: int,
         event_bytes: int) -> list[list[list[Event]]]:
    """Per client, its batches; a client writes only its own rollouts, spreading each batch over them,
    the way an SDK process sends the events of the rollouts it is running."""
    plans: list[list[list[Event]]] = []
    for c in range(clients):
        seqs = [0] * rollouts_per_client
        events: list[Event] = []
        for i in range(per_client):
            r = i % rollouts_per_client
            seqs[r] += 1
            n = c * per_client + i
            events.append(Event(c * rollouts_per_client + r, f"c{c}-e{i}", seqs[r],
                                 {"role": "assistant", "content": content_for(n, event_bytes)}))
        plans.append([events[s : s + batch] for s in range(0, len(events), batch)])
    return plans


def encode_batch(events: list[Event], rollout_ids: list[str]) -> bytes:
    return orjson.dumps({"events": [
        {"rollout_id": rollout_ids[e.slot], "id": e.event_id, "kind": "message", **e.payload, "seq": e.seq}
        for e in events
    ]})


# -- driving the API ----------------------------------------------------------------------------------------

@dataclass
class ClientResult:
    latencies: list[float] = field(default_factory=list)
    created: int = 0
    error: str | None = None


def drive(service: Service, bodies: list[bytes], warmup: bytes, start: threading.Barrier,
          result: ClientResult) -> None:
    headers = {"content-type": "application/json"}
    with service.new_client() as client:
        try:
            response = client.post(INGEST, content=warmup, headers=headers)
            response.raise_for_status()
        except Exception as error:  # reported by the main thread
            result.error = f"warm-up failed: {error!r}"
        start.wait()
        if result.error:
            return
        for body in bodies:
            began = time.perf_counter()
            try:
                response = client.post(INGEST, content=body, headers=headers)
            except Exception as error:
                result.error = f"request failed: {error!r}"
                return
            result.latencies.append(time.perf_counter() - began)
            if response.status_code != 200:
                result.error = f"HTTP {response.status_code}: {response.text[:500]}"
                return
            result.created += orjson.loads(response.content)["created"]


@dataclass
class Measured:
    label: str
    database: str
    events: int
    seconds: float
    requests: int = 0
    latencies: list[float] = field(default_factory=list)
    server_cpu: float | None = None
    db_cpu: float | None = None
    client_cpu: float | None = None
    peak_rss: int | None = None
    stored: str = ""
    load: float = 0.0
    busy: float | None = None  # all cores busy during the phase, everything on the machine included

    @property
    def rate(self) -> float:
        return self.events / self.seconds


def create_rollouts(service: Service, count: int) -> list[str]:
    client = service.client
    response = client.post("/api/v1/runs", json={"workflow_name": "bench-ingest", "agent_name": "bench/ingest.py"})
    response.raise_for_status()
    run_id = response.json()["id"]
    ids = []
    for _ in range(count):
        response = client.post(f"/api/v1/runs/{run_id}/rollouts", json={})
        response.raise_for_status()
        ids.append(response.json()["id"])
    return ids


def stored_through_api(service: Service, rollout_ids: list[str]) -> int:
    total = 0
    with service.new_client() as client:  # a fresh connection: the setup one idled past keep-alive
        for rollout_id in rollout_ids:
            response = client.get(f"/api/v1/rollouts/{rollout_id}", params={"events_limit": 0})
            response.raise_for_status()
            total += int(response.json()["event_count"])
    return total


def stored_in_database(database: str, url: str | None, data_dir: Path) -> int:
    if database == "postgres":
        import psycopg

        assert url is not None
        with psycopg.connect(libpq_url(url)) as conn:
            row = conn.execute("SELECT count(*) FROM trace_events").fetchone()
            return int(row[0]) if row else 0
    with sqlite3.connect(data_dir / "rollout.db") as conn:
        return int(conn.execute("SELECT count(*) FROM trace_events").fetchone()[0])


def bench_api(args: argparse.Namespace, database: str, pg: PostgresServer | None,
              plans: list[list[list[Event]]]) -> Measured:
    data_dir = Path(tempfile.mkdtemp(prefix=f"rollout-bench-{database}-"))
    url = None
    env = {"ROLLOUT_WORKERS": str(args.workers)}
    if database == "postgres":
        assert pg is not None
        pg.drop_database("bench_api")
        url = pg.create_database("bench_api")
    service = start_service(data_dir, database_url=url, **env)
    try:
        rollout_ids = create_rollouts(service, args.clients * args.rollouts_per_client + 1)
        warm_rollout = rollout_ids[-1]
        warm_events = args.warmup_events
        bodies = [[encode_batch(batch, rollout_ids) for batch in batches] for batches in plans]
        warmups = [
            orjson.dumps({"events": [
                {"rollout_id": warm_rollout, "id": f"warm-c{c}-{i}", "kind": "message", "role": "assistant",
                 "content": content_for(i, args.event_bytes)} for i in range(warm_events)
            ]})
            for c in range(args.clients)
        ]
        sent = sum(len(batch) for batches in plans for batch in batches)
        results = [ClientResult() for _ in plans]
        start = threading.Barrier(len(plans) + 1)
        threads = [threading.Thread(target=drive, args=(service, b, w, start, r), daemon=True)
                   for b, w, r in zip(bodies, warmups, results, strict=True)]
        for thread in threads:
            thread.start()
        server_sampler = TreeSampler(service.pid)
        db_sampler = TreeSampler(postmaster_pid(pg) if pg is not None and database == "postgres" else None)
        load = os.getloadavg()[0]
        start.wait()  # every client is connected and warmed up
        server_sampler.start()
        db_sampler.start()
        cpu0 = time.process_time()
        busy0 = busy_seconds()
        began = time.perf_counter()
        for thread in threads:
            thread.join()
        seconds = time.perf_counter() - began
        client_cpu = time.process_time() - cpu0
        busy = busy_seconds() - busy0
        server_sampler.stop()
        db_sampler.stop()

        errors = [r.error for r in results if r.error]
        if errors:
            log = "\n".join(service.server.log_text().splitlines()[-40:])
            raise SystemExit(f"{database}: ingestion failed: {errors[0]}\nserver log (last lines):\n{log}")
        created = sum(r.created for r in results)
        expected = sent + warm_events * args.clients
        via_api = stored_through_api(service, rollout_ids)
        in_db = stored_in_database(database, url, data_dir)
        exact = created == sent and via_api == expected and in_db == expected
        stored = f"{via_api:,}/{expected:,} ok" if exact else \
            f"MISMATCH api {via_api:,} db {in_db:,} created {created:,} expected {expected:,}"
        latencies = [x for r in results for x in r.latencies]
        label = {"postgres": "PostgreSQL", "sqlite": "SQLite"}[database] + " via API"
        if args.workers > 1:
            label += f", {args.workers} workers"
        return Measured(
            label=label, database=database, events=sent, seconds=seconds, requests=len(latencies),
            latencies=latencies, server_cpu=server_sampler.cpu_seconds / seconds,
            db_cpu=(db_sampler.cpu_seconds / seconds) if database == "postgres" else None,
            client_cpu=client_cpu / seconds, peak_rss=server_sampler.peak_rss, stored=stored, load=load,
            busy=busy / seconds,
        )
    finally:
        service.close()
        if database == "postgres" and pg is not None:
            pg.drop_database("bench_api")
        shutil.rmtree(data_dir, ignore_errors=True)


# -- the ceiling: raw COPY ----------------------------------------------------------------------------------

def _copy_text(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def copy_rows(plans: list[list[list[Event]]], rollout_ids: list[str]) -> Iterator[bytes]:
    """The same rows the API stores, in COPY text format, ~1 MB per chunk."""
    now = dt.datetime.now(dt.UTC).isoformat()
    lines: list[str] = []
    size = 0
    for batches in plans:
        for batch in batches:
            for e in batch:
                payload = _copy_text(orjson.dumps(e.payload).decode())
                line = f"{rollout_ids[e.slot]}\t{e.event_id}\t{e.seq}\tmessage\t{payload}\t{now}\n"
                lines.append(line)
                size += len(line)
                if size > 1 << 20:
                    yield "".join(lines).encode()
                    lines, size = [], 0
    if lines:
        yield "".join(lines).encode()


def parent_rows(url: str, count: int) -> list[str]:
    """A workspace, a run and `count` rollouts made by the service's own code (FK targets for COPY)."""
    from rollout_server.db.session import open_database
    from rollout_server.rollouts import service as rollouts
    from rollout_server.rollouts.schemas import RolloutCreate
    from rollout_server.runs import service as runs
    from rollout_server.runs.schemas import RunCreate
    from rollout_server.workspaces import service as workspaces

    db = open_database(url, pool_size=1)
    try:
        with db.transaction() as session:
            workspace = workspaces.create_workspace(session, "bench-copy")
            run = runs.start_run(session, workspace.id, RunCreate(workflow_name="bench-copy"))
            return [rollouts.start_rollout(session, workspace.id, run.id, RolloutCreate()).id for _ in range(count)]
    finally:
        db.dispose()


def bench_copy(args: argparse.Namespace, pg: PostgresServer, plans: list[list[list[Event]]]) -> Measured:
    import psycopg

    from rollout_server.db.migrate import upgrade

    pg.drop_database("bench_copy")
    url = pg.create_database("bench_copy")
    try:
        upgrade(url)
        rollout_ids = parent_rows(url, args.clients * args.rollouts_per_client)
        chunks = list(copy_rows(plans, rollout_ids))  # encoded before the clock, like the API's bodies
        sent = sum(len(batch) for batches in plans for batch in batches)
        db_sampler = TreeSampler(postmaster_pid(pg))
        with psycopg.connect(libpq_url(url)) as conn:
            load = os.getloadavg()[0]
            db_sampler.start()
            cpu0 = time.process_time()
            busy0 = busy_seconds()
            began = time.perf_counter()
            with conn.cursor() as cursor, cursor.copy(
                "COPY trace_events (rollout_id, event_id, seq, kind, payload, created_at) FROM STDIN"
            ) as copy:
                for chunk in chunks:
                    copy.write(chunk)
            conn.commit()
            seconds = time.perf_counter() - began
            client_cpu = time.process_time() - cpu0
            busy = busy_seconds() - busy0
            db_sampler.stop()
            stored = int(conn.execute("SELECT count(*) FROM trace_events").fetchone()[0])  # type: ignore[index]
        return Measured(
            label="PostgreSQL COPY (ceiling)", database="copy", events=sent, seconds=seconds, requests=1,
            db_cpu=db_sampler.cpu_seconds / seconds, client_cpu=client_cpu / seconds,
            stored=f"{stored:,}/{sent:,} ok" if stored == sent else f"MISMATCH {stored:,}/{sent:,}", load=load,
            busy=busy / seconds,
        )
    finally:
        pg.drop_database("bench_copy")


# -- report -------------------------------------------------------------------------------------------------

def report(measured: list[Measured], copy: Measured | None) -> None:
    headers = ["Path", "Events", "Wall s", "Events/s", "Req/s", "p50 ms", "p99 ms", "Server CPU",
               "Server µs/event", "PG CPU", "Client CPU", "Other CPU", "Server peak RSS", "Stored", "vs COPY",
               "Target"]
    rows = []
    phases = [*measured, *([copy] if copy else [])]
    for m in phases:
        def cores(value: float | None) -> str:
            return "-" if value is None else f"{value:.2f}"

        ours = sum(x or 0.0 for x in (m.server_cpu, m.db_cpu, m.client_cpu))
        target = TARGETS.get(m.database)
        rows.append([
            m.label, f"{m.events:,}", f"{m.seconds:.1f}", f"{m.rate:,.0f}",
            f"{m.requests / m.seconds:,.1f}" if m.latencies else "-",
            f"{percentile(m.latencies, 50) * 1000:.0f}" if m.latencies else "-",
            f"{percentile(m.latencies, 99) * 1000:.0f}" if m.latencies else "-",
            cores(m.server_cpu),
            f"{m.server_cpu * m.seconds / m.events * 1e6:.0f}" if m.server_cpu is not None else "-",
            cores(m.db_cpu), cores(m.client_cpu),
            cores(max(0.0, m.busy - ours)) if m.busy is not None else "-",
            f"{m.peak_rss / 2**20:,.0f} MB" if m.peak_rss else "-", m.stored,
            f"{m.rate / copy.rate:.1%}" if copy else "-",
            "-" if target is None else f"{'met' if m.rate >= target else 'MISSED'} (>= {target:,})",
        ])
    print()
    print_table(headers, rows)
    print("\nCPU columns: cores busy during the timed phase (1.00 = one core of 2). PG CPU is the whole PostgreSQL "
          "cluster; Other CPU is the rest of the machine (other processes competing for the 2 cores). "
          "Load average (1 min) at the start of each phase: "
          + ", ".join(f"{m.label} {m.load:.2f}" for m in phases))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--events", type=int, default=200_000, help="Events per database (default 200,000).")
    parser.add_argument("--clients", type=int, default=8, help="Concurrent clients (default 8).")
    parser.add_argument("--batch", type=int, default=500, help="Events per request (default 500).")
    parser.add_argument("--event-bytes", type=int, default=300, help="Approximate encoded size of one event.")
    parser.add_argument("--rollouts-per-client", type=int, default=8,
                        help="Rollouts each client spreads its events over (default 8).")
    parser.add_argument("--warmup-events", type=int, default=200, help="Untimed events per client first.")
    parser.add_argument("--workers", type=int, default=1, help="Server worker processes (ROLLOUT_WORKERS).")
    parser.add_argument("--only", choices=["sqlite", "postgres"], help="Benchmark one database only.")
    parser.add_argument("--no-copy", action="store_true", help="Skip the COPY ceiling.")
    args = parser.parse_args()
    if args.clients < 1 or args.batch < 1 or args.events < args.clients:
        parser.error("need --clients >= 1, --batch >= 1 and --events >= --clients")

    per_client = args.events // args.clients
    plans = plan(args.clients, per_client, args.batch, args.rollouts_per_client, args.event_bytes)
    sample = encode_batch(plans[0][0], [f"ro_{'x' * 26}"] * (args.clients * args.rollouts_per_client))
    databases = [args.only] if args.only else ["postgres", "sqlite"]
    print(f"bench/ingest.py  {dt.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}")
    print(f"machine: {machine_summary()}")
    print(f"workload: {per_client * args.clients:,} events per database, {args.clients} clients x batches of "
          f"{args.batch} events (~{len(sample) / len(plans[0][0]):.0f} bytes each, {len(sample) / 1024:.0f} KiB "
          f"per request), {args.rollouts_per_client} rollouts per client, server workers: {args.workers}",
          flush=True)

    pg = start_postgres() if ("postgres" in databases or not args.no_copy) else None
    try:
        measured = []
        for database in databases:
            print(f"... {database}: ingesting", flush=True)
            measured.append(bench_api(args, database, pg, plans))
            print(f"    {measured[-1].rate:,.0f} events/s", flush=True)
        copy = None
        if not args.no_copy and pg is not None:
            print("... PostgreSQL COPY of the same rows", flush=True)
            copy = bench_copy(args, pg, plans)
            print(f"    {copy.rate:,.0f} events/s", flush=True)
        report(measured, copy)
    finally:
        if pg is not None:
            pg.stop()
    if any("MISMATCH" in m.stored for m in measured):
        sys.exit(1)


if __name__ == "__main__":
    main()
