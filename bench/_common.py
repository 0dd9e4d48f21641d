"""Helpers the bench scripts share: throwaway servers, process sampling, machine facts, one table printer.

Bench scripts are standalone (`python bench/<name>.py`); they import this module by its bare name and reuse
the test harness in tests/support/ to start PostgreSQL and real uvicorn processes.
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.support.live_server import LiveServer  # noqa: E402
from tests.support.postgres import PostgresServer, libpq_url, postgres_available_reason  # noqa: E402

__all__ = [
    "ROOT", "LiveServer", "PostgresServer", "Service", "TreeSampler", "busy_seconds", "libpq_url", "machine_summary",
    "percentile", "postgres_available_reason", "postmaster_pid", "print_table", "start_postgres",
    "start_service",
]


# -- servers ------------------------------------------------------------------------------------------------

def start_postgres() -> PostgresServer:
    """A throwaway PostgreSQL server (the test harness's: fsync off, so it measures CPU, not the disk)."""
    reason = postgres_available_reason()
    if reason:
        raise SystemExit(f"cannot start PostgreSQL for the benchmark: {reason}")
    return PostgresServer().start()


def postmaster_pid(server: PostgresServer) -> int | None:
    """PID of the server's postmaster (to sample its CPU and memory), or None when it runs elsewhere."""
    with server.connect() as conn:
        row = conn.execute("SELECT setting FROM pg_settings WHERE name = 'data_directory'").fetchone()
    try:
        return int((Path(row[0]) / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError, TypeError):
        return None


@dataclass
class Service:
    """A running `rollout-server serve` and a client authenticated into its init workspace."""

    server: LiveServer
    api_key: str
    client: httpx.Client = field(repr=False)

    @property
    def pid(self) -> int:
        assert self.server.process is not None
        return self.server.process.pid

    def new_client(self, timeout: float = 120.0) -> httpx.Client:
        return httpx.Client(base_url=self.server.base_url, timeout=timeout, trust_env=False,
                            headers={"authorization": f"Bearer {self.api_key}"})

    def close(self) -> None:
        self.client.close()
        self.server.close()


def start_service(data_dir: Path, *, database_url: str | None = None, api_key: str | None = None,
                  **env: str) -> Service:
    """Start a real uvicorn process of the service (demo content off) and return it with an API key.

    With ROLLOUT_WORKERS > 1 the database is set up first by a one-worker start: several workers starting
    on an empty database would each run the first-start setup at once.
    """
    api_key = api_key or "rk_bench_" + uuid.uuid4().hex + uuid.uuid4().hex[:8]
    if int(env.get("ROLLOUT_WORKERS", "1")) > 1:
        start_service(data_dir, database_url=database_url, api_key=api_key,
                      **{**env, "ROLLOUT_WORKERS": "1"}).close()
    values = {
        "ROLLOUT_DATA_DIR": str(data_dir),
        "ROLLOUT_INIT_API_KEY": api_key,
        "ROLLOUT_DEMO": "0",
        "ROLLOUT_INIT_ADMIN_PASSWORD": "bench-admin-password",
    }
    if database_url:
        values["ROLLOUT_DATABASE_URL"] = database_url
    values.update(env)
    server = LiveServer(values, cwd=str(ROOT)).start()
    service = Service(server=server, api_key=api_key, client=httpx.Client())
    service.client = service.new_client()
    return service


# -- measuring ----------------------------------------------------------------------------------------------

class TreeSampler:
    """Samples a process and its descendants in a background thread: peak summed RSS and CPU seconds used.

    `start()` / `stop()` bracket the measured phase; CPU is the tree's user+system time between them.
    """

    def __init__(self, pid: int | None, interval: float = 0.05) -> None:
        self.pid = pid
        self.interval = interval
        self.peak_rss = 0
        self.cpu_seconds = 0.0
        self._cpu: dict[int, float] = {}
        self._cpu_start: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _tree(self) -> list[psutil.Process]:
        if self.pid is None:
            return []
        try:
            root = psutil.Process(self.pid)
            return [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def _sample(self) -> None:
        rss = 0
        for proc in self._tree():
            try:
                with proc.oneshot():
                    rss += proc.memory_info().rss
                    times = proc.cpu_times()
                    self._cpu[proc.pid] = times.user + times.system
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
        self.peak_rss = max(self.peak_rss, rss)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self.interval)

    def start(self) -> TreeSampler:
        self._sample()
        self._cpu_start = dict(self._cpu)
        self._thread = threading.Thread(target=self._run, name="tree-sampler", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> TreeSampler:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._sample()
        # Processes that appeared mid-phase (new PostgreSQL backends) count from zero.
        self.cpu_seconds = sum(cpu - self._cpu_start.get(pid, 0.0) for pid, cpu in self._cpu.items())
        return self


def busy_seconds() -> float:
    """CPU seconds all cores have spent busy since boot (everything on the machine, not just us)."""
    times = psutil.cpu_times()
    # Linux counts guest time inside user time as well; iowait is idle time.
    not_busy = ("idle", "iowait", "guest", "guest_nice")
    return float(sum(times) - sum(getattr(times, name, 0.0) for name in not_busy))


def percentile(values: Sequence[float], pct: float) -> float:
    """The pct-th percentile (inclusive method); 0.0 for no values."""
    if not values:
        return 0.0
    if len(values) == 1:
        return float(values[0])
    return statistics.quantiles(values, n=100, method="inclusive")[int(pct) - 1]


def machine_summary() -> str:
    """One line: core count, CPU model, memory, Python, load average when the run started."""
    model = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = psutil.virtual_memory().total / 2**30
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (f"{os.cpu_count()} cores ({model}), {memory:.0f} GiB RAM, Python {platform.python_version()}, "
            f"load average at start {load}")


# -- output -------------------------------------------------------------------------------------------------

def print_table(headers: Sequence[str], rows: Sequence[Sequence[object]], *, markdown: bool = True) -> str:
    """Print rows as a Markdown table (pasteable into docs/benchmarks.md) and return the text."""
    cells = [[str(h) for h in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]

    def line(row: Sequence[str]) -> str:
        parts = [c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))]
        return "| " + " | ".join(parts) + " |" if markdown else "  ".join(parts)

    out = [line(cells[0])]
    if markdown:
        out.append("|" + "|".join(("-" * (w + 1) + ":") if i else ("-" * (w + 2))
                                  for i, w in enumerate(widths)) + "|")
    out += [line(row) for row in cells[1:]]
    text = "\n".join(out)
    print(text, flush=True)
    return text
