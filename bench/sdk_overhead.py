"""What the Python SDK costs the agent, and how fast one process delivers events.

Two figures per target server:
- caller-thread cost of `attempt.message()` with the server up and the sender running (target < 20 µs,
  median), timed call by call;
- sustained delivered throughput from one process: events recorded as fast as possible over many rollouts,
  then `flush()`; events/s from the first call to the server confirming the last event (target ≥ 20,000).

Targets: a null ingest server in its own process (accepts and counts, stores nothing: the SDK's own
ceiling), the real service on SQLite, and on PostgreSQL when a throwaway cluster can be started.

    python bench/sdk_overhead.py                         # 200,000 events over 200 rollouts per target
    python bench/sdk_overhead.py --events 50000 --only null,sqlite
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from _common import ROOT, machine_summary, percentile, print_table, start_postgres, start_service

sys.path.insert(0, str(ROOT / "sdk-python" / "src"))

import rollout

NULL_SERVER = textwrap.dedent(
    """
    import json, sys
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # else headers and body wait on delayed ACKs (40 ms a request)

        def log_message(self, *args):
            pass

        def _answer(self, body):
            data = json.dumps(body).encode()
            self.send_response(201 if self.path.endswith("/rollouts") or self.path.endswith("/runs") else 200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):
            raw = self.rfile.read(int(self.headers.get("content-length", 0)))
            if self.path.endswith("/ingest"):
                n = raw.count(b'"kind":')
                self._answer({"created": n, "duplicates": 0, "rejected": 0, "events": [], "scores": []})
            elif self.path.endswith("/runs"):
                self._answer({"id": "run_null", "number": 1, "url": "", "status": "running"})
            elif self.path.endswith("/rollouts"):
                Handler.count = getattr(Handler, "count", 0) + 1
                self._answer({"id": f"ro_null{Handler.count}", "run_id": "run_null", "run_number": 1,
                              "attempt": Handler.count, "url": "", "status": "running"})
            else:
                self._answer({"id": "x", "run_id": "run_null", "run_number": 1, "attempt": 1, "status": "succeeded"})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()
    """
)


def measure(base_url: str, api_key: str, events: int, rollouts: int, spool: Path) -> dict[str, Any]:
    client = rollout.Client(base_url, api_key, spool_dir=spool, max_queue_size=events + rollouts + 10)
    run = client.start_run(workflow_name="bench-sdk-overhead")
    attempts = [run.start_rollout(input={"n": n}) for n in range(rollouts)]

    # 1. Caller cost, one call at a time, with the sender delivering in the background.
    samples = []
    clock = time.perf_counter_ns
    probe = attempts[0]
    for _ in range(min(events // 4, 50_000)):
        started = clock()
        probe.message("The quick brown fox jumps over the lazy dog.", role="assistant")
        samples.append(clock() - started)
    assert client.flush(timeout=600)

    # 2. Sustained throughput: record everything, then wait for the last confirmation.
    per = events // rollouts
    started_s = time.perf_counter()
    for attempt in attempts:
        for k in range(per):
            attempt.message(f"message {k} of a long conversation", role="user")
    recorded_s = time.perf_counter() - started_s
    assert client.flush(timeout=1800), client._core.sender.stats
    total_s = time.perf_counter() - started_s
    for attempt in attempts:
        attempt.finish()
    client.close()
    micro = [s / 1000 for s in samples]
    return {
        "median_us": statistics.median(micro),
        "p99_us": percentile(micro, 99),
        "events": per * rollouts,
        "record_s": recorded_s,
        "total_s": total_s,
        "stats": client._core.sender.stats,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--rollouts", type=int, default=200)
    parser.add_argument("--only", default="null,sqlite,postgres")
    args = parser.parse_args()
    targets = args.only.split(",")
    print(machine_summary(), flush=True)
    rows = []
    work = Path(tempfile.mkdtemp(prefix="bench-sdk-"))
    try:
        if "null" in targets:
            null = subprocess.Popen([sys.executable, "-c", NULL_SERVER], stdout=subprocess.PIPE, text=True)
            try:
                assert null.stdout is not None
                port = int(null.stdout.readline())
                result = measure(f"http://127.0.0.1:{port}", "rk_null", args.events, args.rollouts, work / "s0")
                rows.append(("null ingest server (SDK ceiling)", result))
            finally:
                null.kill()
        if "sqlite" in targets:
            service = start_service(work / "sqlite")
            try:
                rows.append(
                    (
                        "rollout-server, SQLite",
                        measure(service.server.base_url, service.api_key, args.events, args.rollouts, work / "s1"),
                    )
                )
            finally:
                service.close()
        if "postgres" in targets:
            try:
                postgres = start_postgres()
            except SystemExit as reason:
                print(f"skipping PostgreSQL: {reason}", flush=True)
            else:
                try:
                    url = postgres.create_database("bench_sdk")
                    service = start_service(work / "pg", database_url=url)
                    try:
                        rows.append(
                            (
                                "rollout-server, PostgreSQL",
                                measure(
                                    service.server.base_url, service.api_key, args.events, args.rollouts, work / "s2"
                                ),
                            )
                        )
                    finally:
                        service.close()
                finally:
                    postgres.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print_table(
        ["target", "message() median µs", "p99 µs", "events", "recording s", "delivered s", "delivered events/s"],
        [
            (
                name,
                f"{r['median_us']:.1f}",
                f"{r['p99_us']:.1f}",
                f"{r['events']:,}",
                f"{r['record_s']:.2f}",
                f"{r['total_s']:.2f}",
                f"{r['events'] / r['total_s']:,.0f}",
            )
            for name, r in rows
        ],
    )
    print(f"load average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
