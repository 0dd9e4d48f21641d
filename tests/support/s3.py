"""A real S3 protocol server on loopback for the test session: moto's standalone server in a subprocess.

Nothing is patched in-process, so the service (and a live uvicorn) talks HTTP to it exactly as
it would to AWS or MinIO. The module sets no environment; callers apply `env()` where needed.
"""

from __future__ import annotations

import atexit
import importlib.util
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from tests.support.live_server import DIRECT_OPENER, free_port, http_status, tail, terminate_process

ACCESS_KEY = "test"
SECRET_KEY = "test"
REGION = "us-east-1"


def s3_available_reason() -> str | None:
    """Why the loopback S3 server cannot start here, or None when it can."""
    if importlib.util.find_spec("moto") is None:
        return "moto is not installed (pip install 'moto[server]')"
    for module in ("flask", "flask_cors"):  # the extras moto.server needs
        if importlib.util.find_spec(module) is None:
            return f"moto's server extra is missing ({module}); pip install 'moto[server]'"
    if importlib.util.find_spec("boto3") is None:
        return "boto3 is not installed"
    return None


class S3Server:
    """`python -m moto.server` on 127.0.0.1 at a free port.

    >>> s3 = S3Server().start()
    >>> s3.create_bucket("rollout-test")
    >>> settings = {"ROLLOUT_STORAGE_URL": "s3://rollout-test", **s3.env()}
    """

    def __init__(
        self, *, host: str = "127.0.0.1", port: int | None = None, startup_timeout: float = 30.0
    ) -> None:
        self.host = host
        self.port = port
        self.startup_timeout = startup_timeout
        self.process: subprocess.Popen[bytes] | None = None
        self._tmpdir: Path | None = None
        self._atexit_registered = False
        self.startup_seconds: float | None = None

    @property
    def endpoint_url(self) -> str:
        if self.port is None:
            raise RuntimeError("S3Server is not started; call start() first")
        return f"http://{self.host}:{self.port}"

    @property
    def log_path(self) -> Path:
        if self._tmpdir is None:
            raise RuntimeError("S3Server is not started")
        return self._tmpdir / "moto.log"

    def env(self) -> dict[str, str]:
        """Credentials and region for boto3 (and the service) to talk to this server."""
        return {
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_DEFAULT_REGION": REGION,
        }

    def start(self) -> S3Server:
        if self.process is not None and self.process.poll() is None:
            return self
        reason = s3_available_reason()
        if reason:
            raise RuntimeError(reason)
        began = time.monotonic()
        self._tmpdir = Path(tempfile.mkdtemp(prefix="rollout-s3-"))
        last_error = ""
        for _ in range(3):  # the free port can be taken between choosing and binding it
            self.port = self.port or free_port(self.host)
            with self.log_path.open("ab") as log:
                self.process = subprocess.Popen(
                    [sys.executable, "-m", "moto.server", "-H", self.host, "-p", str(self.port)],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    cwd=self._tmpdir,
                    start_new_session=True,
                )
            if not self._atexit_registered:
                atexit.register(self.stop)
                self._atexit_registered = True
            if self._wait_ready():
                self.startup_seconds = time.monotonic() - began
                return self
            last_error = tail(self.log_path)
            terminate_process(self.process, 5)
            self.port = None
        self.stop()
        raise RuntimeError(
            f"moto server did not answer within {self.startup_timeout:.0f} s; log:\n{last_error}"
        )

    def _wait_ready(self) -> bool:
        assert self.process is not None
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            if http_status(self.endpoint_url + "/moto-api/", timeout=1.0) is not None:
                return True
            time.sleep(0.1)
        return False

    def stop(self) -> None:
        if self.process is not None:
            terminate_process(self.process, 5)
            self.process = None
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None

    def reset(self) -> None:
        """Forget every bucket and object (moto's reset endpoint); cheap isolation between tests."""
        request = urllib.request.Request(self.endpoint_url + "/moto-api/reset", method="POST")
        with DIRECT_OPENER.open(request, timeout=10):
            pass

    def client(self) -> Any:
        """A boto3 S3 client pointed at this server (path-style addressing, test credentials)."""
        import boto3
        from botocore.config import Config

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name=REGION,
            config=Config(s3={"addressing_style": "path"}),
        )

    def create_bucket(self, name: str) -> str:
        """Create `name` (us-east-1 needs no location constraint) and return it."""
        self.client().create_bucket(Bucket=name)
        return name

    def __enter__(self) -> S3Server:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
