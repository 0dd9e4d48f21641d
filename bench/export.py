"""Streaming export throughput: rollouts x events from PostgreSQL to JSONL through `GET /api/v1/exports/…`,
against a raw `COPY (SELECT …) TO STDOUT` of the same rows as the ceiling.

Starts its own throwaway PostgreSQL and a real uvicorn process, loads the rollouts and their events with COPY
(the load is not measured), then streams the export as a client would and reports rollouts/s, MB/s, the
server's peak RSS (target ≤ 300 MB, flat in the number of rollouts), and the CPU used by server and database.

    python bench/export.py                              # 100,000 rollouts x 10 events, native format
    python bench/export.py --rollouts 20000 --formats rollout,openai-sft,grpo
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import orjson
from _common import (
    PostgresServer,
    TreeSampler,
    libpq_url,
    machine_summary,
    postmaster_pid,
    print_table,
    start_postgres,
    start_service,
)

TARGET_RATE = 10_000  # rollouts/s, issue 5
TARGET_RSS = 300 * 2**20
TEXT = "The agent looks at the task, calls a tool, reads the result and answers in a sentence or two. "


@dataclass
class Measured:
    label: str
    rollouts: int
    events: int
    seconds: float
    bytes: int
    peak_rss: int | None
    server_cpu: float | None
    db_cpu: float


def _copy_text(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def _rows(workspace_id: str, run_id: str, rollouts: int, events: int, event_bytes: int
          ) -> tuple[Iterator[bytes], Iterator[bytes]]:
    base = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
    filler = (TEXT * (event_bytes // len(TEXT) + 1))[:event_bytes]
    ids = [f"ro_bench{n:018d}" for n in range(rollouts)]

    def rollout_rows() -> Iterator[bytes]:
        out: list[str] = []
        for n, rid in enumerate(ids):
            started = (base + dt.timedelta(milliseconds=n)).isoformat()
            ended = (base + dt.timedelta(milliseconds=n + 900)).isoformat()
            output = _copy_text(orjson.dumps(f"answer {n}").decode())
            out.append(f"{rid}\t{workspace_id}\t{run_id}\t{n + 1}\t{n % 8}\tsucceeded\t{output}\t{(n % 5) / 4}\tf\t"
                       f"{started}\t{ended}\t900\t120\t40\t0.001\t{events}\t{events}\n")
            if len(out) == 5000:
                yield "".join(out).encode()
                out = []
        if out:
            yield "".join(out).encode()

    def event_rows() -> Iterator[bytes]:
        out: list[str] = []
        now = base.isoformat()
        for rid in ids:
            for seq in range(1, events + 1):
                if seq == 1:
                    kind, body = "message", {"role": "user", "content": filler}
                elif seq % 3 == 2:
                    kind, body = "tool_call", {"arguments": {"q": filler[:40]}, "call_id": f"c{seq}"}
                elif seq % 3 == 0:
                    kind, body = "tool_result", {"call_id": f"c{seq - 1}", "output": filler}
                else:
                    kind, body = "message", {"role": "assistant", "content": filler}
                name = "search" if kind == "tool_call" else "\\N"
                out.append(f"{rid}\te{seq}\t{seq}\t{kind}\t{name}\t{_copy_text(orjson.dumps(body).decode())}\t{now}\n")
            if len(out) >= 20000:
                yield "".join(out).encode()
                out = []
        if out:
            yield "".join(out).encode()

    return rollout_rows(), event_rows()


def load(url: str, workspace_id: str, run_id: str, rollouts: int, events: int, event_bytes: int) -> None:
    import psycopg

    rollout_rows, event_rows = _rows(workspace_id, run_id, rollouts, events, event_bytes)
    with psycopg.connect(libpq_url(url)) as conn, conn.cursor() as cursor:
        with cursor.copy("COPY rollouts (id, workspace_id, run_id, attempt, repeat_index, status, output, reward, "
                         "discarded, started_at, ended_at, latency_ms, input_tokens, output_tokens, cost, event_count, "
                         "last_seq) FROM STDIN") as copy:
            for chunk in rollout_rows:
                copy.write(chunk)
        with cursor.copy("COPY trace_events (rollout_id, event_id, seq, kind, name, payload, created_at) "
                         "FROM STDIN") as copy:
            for chunk in event_rows:
                copy.write(chunk)
        cursor.execute("UPDATE runs SET next_attempt = %s WHERE id = %s", (rollouts + 1, run_id))
        conn.commit()
        cursor.execute("ANALYZE rollouts")
        cursor.execute("ANALYZE trace_events")
        conn.commit()


def stream_export(base_url: str, api_key: str, path: str, params: dict[str, str]) -> tuple[int, int, float]:
    lines = size = 0
    began = time.perf_counter()
    with httpx.Client(base_url=base_url, timeout=600, trust_env=False,
                      headers={"authorization": f"Bearer {api_key}"}) as client, \
            client.stream("GET", path, params=params) as response:
        response.raise_for_status()
        for chunk in response.iter_bytes(1 << 20):
            size += len(chunk)
            lines += chunk.count(b"\n")
    return lines, size, time.perf_counter() - began


def bench_copy(url: str, run_id: str, pg: PostgresServer, rollouts: int, events: int) -> Measured:
    import psycopg

    db = TreeSampler(postmaster_pid(pg))
    size = 0
    with psycopg.connect(libpq_url(url)) as conn, conn.cursor() as cursor:
        db.start()
        began = time.perf_counter()
        with cursor.copy("COPY (SELECT r.id, r.attempt, r.status, r.output, r.reward, r.started_at, r.ended_at, "
                         "r.latency_ms, r.input_tokens, r.output_tokens, r.cost FROM rollouts r WHERE r.run_id = "
                         f"'{run_id}' ORDER BY r.run_id, r.attempt) TO STDOUT") as copy:
            for chunk in copy:
                size += len(chunk)
        with cursor.copy("COPY (SELECT e.rollout_id, e.event_id, e.seq, e.kind, e.name, e.payload FROM trace_events e "
                         f"JOIN rollouts r ON r.id = e.rollout_id WHERE r.run_id = '{run_id}' "
                         "ORDER BY e.rollout_id, e.seq, e.pk) TO STDOUT") as copy:
            for chunk in copy:
                size += len(chunk)
        seconds = time.perf_counter() - began
        db.stop()
    return Measured("raw COPY (SELECT …) TO STDOUT (ceiling)", rollouts, rollouts * events, seconds, size, None, None,
                    db.cpu_seconds / seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rollouts", type=int, default=100_000)
    parser.add_argument("--events", type=int, default=10, help="events per rollout")
    parser.add_argument("--event-bytes", type=int, default=200, help="text per message or tool result")
    parser.add_argument("--formats", default="rollout", help="comma-separated export formats to time")
    args = parser.parse_args()

    print(machine_summary(), flush=True)
    pg = start_postgres()
    data_dir = Path(tempfile.mkdtemp(prefix="rollout-bench-export-"))
    url = pg.create_database("bench_export")
    service = start_service(data_dir, database_url=url, ROLLOUT_WORKER_IN_PROCESS="0")
    results: list[Measured] = []
    try:
        run = service.client.post("/api/v1/runs", json={"workflow_name": "bench-export"}).json()
        import psycopg

        with psycopg.connect(libpq_url(url)) as conn:
            workspace_id = conn.execute("SELECT workspace_id FROM runs WHERE id = %s", (run["id"],)).fetchone()[0]
        began = time.perf_counter()
        load(url, workspace_id, run["id"], args.rollouts, args.events, args.event_bytes)
        print(f"loaded {args.rollouts:,} rollouts x {args.events} events in {time.perf_counter() - began:.1f} s",
              flush=True)
        stream_export(service.server.base_url, service.api_key, "/api/v1/exports/rollout",
                      {"run": run["id"], "limit": "1000"})  # warm-up: imports, connections, plans
        for fmt in args.formats.split(","):
            server = TreeSampler(service.pid)
            db = TreeSampler(postmaster_pid(pg))
            server.start()
            db.start()
            lines, size, seconds = stream_export(service.server.base_url, service.api_key, f"/api/v1/exports/{fmt}",
                                                 {"run": run["id"]})
            server.stop()
            db.stop()
            if fmt == "rollout" and lines != args.rollouts:
                raise SystemExit(f"exported {lines} lines, expected {args.rollouts}")
            results.append(Measured(f"GET /api/v1/exports/{fmt} (JSONL)", args.rollouts, args.rollouts * args.events,
                                    seconds, size, server.peak_rss, server.cpu_seconds / seconds,
                                    db.cpu_seconds / seconds))
        results.append(bench_copy(url, run["id"], pg, args.rollouts, args.events))
    finally:
        service.close()
        pg.drop_database("bench_export")
        pg.stop()
        shutil.rmtree(data_dir, ignore_errors=True)

    rows = []
    for m in results:
        rows.append([m.label, f"{m.rollouts:,}", f"{m.events:,}", f"{m.seconds:.1f}", f"{m.rollouts / m.seconds:,.0f}",
                     f"{m.bytes / m.seconds / 2**20:.0f}",
                     f"{m.peak_rss / 2**20:.0f}" if m.peak_rss else "-",
                     f"{m.server_cpu:.2f}" if m.server_cpu is not None else "-", f"{m.db_cpu:.2f}"])
    print()
    print_table(["export", "rollouts", "events", "s", "rollouts/s", "MB/s", "server peak RSS MB", "server CPU",
                 "db CPU"], rows)
    native = next((m for m in results if m.label.startswith("GET /api/v1/exports/rollout")), None)
    if native is not None:
        ok = native.rollouts / native.seconds >= TARGET_RATE and (native.peak_rss or 0) <= TARGET_RSS
        print(f"\ntarget ≥ {TARGET_RATE:,} rollouts/s with peak RSS ≤ {TARGET_RSS // 2**20} MB: "
              f"{'met' if ok else 'NOT met'}")
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
