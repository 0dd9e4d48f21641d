"""A real uvicorn process running the service, for SDK, CLI, browser and fault tests.

The caller owns the configuration: it passes the ROLLOUT_* environment; this module only
starts, watches and stops the process and keeps its output in a log file for failures.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port that was free a moment ago (the caller must bind it soon)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


# Loopback probes must never go through an HTTP(S)_PROXY a CI machine may set.
DIRECT_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def http_status(url: str, timeout: float = 2.0) -> int | None:
    """GET `url` and return its status code, or None when nothing answers."""
    try:
        with DIRECT_OPENER.open(url, timeout=timeout) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
        return None


def tail(path: Path, max_lines: int = 200) -> str:
    """Last lines of a log file, for error messages."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return "(no log written)"
    return "\n".join(lines[-max_lines:]) or "(log is empty)"


def terminate_process(process: subprocess.Popen[bytes], grace_seconds: float = 10.0) -> None:
    """SIGTERM, wait up to `grace_seconds`, then SIGKILL the whole process group."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=grace_seconds)
    except subprocess.TimeoutExpired:
        kill_process_group(process)
    else:
        # Reap anything the server spawned that ignored the TERM (workers, reloaders).
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)


def kill_process_group(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process and everything in its group (it was started in its own session)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        process.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=10)


class LiveServer:
    """`rollout_server.cli serve` in a subprocess on 127.0.0.1.

    Use as a context manager or call `start()` / `stop()`. `kill()` simulates a crash and
    `restart()` brings the service back on the same port with the same environment.
    """

    def __init__(
        self,
        env: Mapping[str, str],
        *,
        port: int | None = None,
        host: str = "127.0.0.1",
        cwd: str | os.PathLike[str] | None = None,
        startup_timeout: float = 60.0,
        stop_timeout: float = 10.0,
        health_path: str = "/healthz",
        inherit_env: bool = True,
        command: Sequence[str] | None = None,
        log_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        self.host = host
        self.port = port or free_port(host)
        self.env = dict(env)
        self.cwd = cwd
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self.health_path = health_path
        self.inherit_env = inherit_env
        self._command = list(command) if command is not None else None
        self._own_log_dir = log_dir is None
        self.log_dir = (
            Path(log_dir) if log_dir is not None else Path(tempfile.mkdtemp(prefix="rollout-live-"))
        )
        self.log_path = self.log_dir / "server.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def command(self) -> list[str]:
        if self._command is not None:
            return self._command
        return [
            sys.executable, "-m", "rollout_server.cli", "serve",
            "--host", self.host, "--port", str(self.port),
        ]  # fmt: skip

    @property
    def is_running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_text(self) -> str:
        """Everything the process has printed so far (all starts)."""
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def start(self) -> LiveServer:
        """Start the process and block until the health check answers 200."""
        if self.is_running:
            raise RuntimeError(f"live server already running at {self.base_url} (pid {self.process.pid})")  # type: ignore[union-attr]
        env = {**os.environ, **self.env} if self.inherit_env else dict(self.env)
        env.setdefault("PYTHONUNBUFFERED", "1")
        self.starts += 1
        with self.log_path.open("ab") as log:
            log.write(f"\n===== start #{self.starts}: {' '.join(self.command)}\n".encode())
            log.flush()
            self.process = subprocess.Popen(
                self.command,
                env=env,
                cwd=self.cwd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # so kill() can take the whole group down
            )
        self._wait_healthy()
        return self

    def _wait_healthy(self) -> None:
        assert self.process is not None
        url = self.base_url + self.health_path
        deadline = time.monotonic() + self.startup_timeout
        last_status: int | None = None
        while time.monotonic() < deadline:
            code = self.process.poll()
            if code is not None:
                raise RuntimeError(
                    f"live server exited with status {code} before {url} answered.\n"
                    f"command: {' '.join(self.command)}\nlog ({self.log_path}):\n{tail(self.log_path)}"
                )
            last_status = http_status(url, timeout=2.0)
            if last_status == 200:
                return
            time.sleep(0.1)
        kill_process_group(self.process)
        raise RuntimeError(
            f"live server did not answer 200 on {url} within {self.startup_timeout:.0f} s "
            f"(last status: {last_status}); killed it.\n"
            f"command: {' '.join(self.command)}\nlog ({self.log_path}):\n{tail(self.log_path)}"
        )

    def stop(self) -> None:
        """Graceful stop: SIGTERM, then SIGKILL after `stop_timeout` seconds."""
        if self.process is not None:
            terminate_process(self.process, self.stop_timeout)

    def kill(self) -> None:
        """Crash the server: SIGKILL with no chance to clean up."""
        if self.process is not None:
            kill_process_group(self.process)

    def restart(self) -> LiveServer:
        """Stop if needed and start again on the same port with the same environment."""
        self.stop()
        return self.start()

    def close(self) -> None:
        """Stop and remove the log directory if this object created it."""
        self.stop()
        if self._own_log_dir:
            shutil.rmtree(self.log_dir, ignore_errors=True)

    def __enter__(self) -> LiveServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        # Keep the log when the block failed; it is the first thing to read.
        if exc_type is None:
            self.close()
        else:
            self.stop()
