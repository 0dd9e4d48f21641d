"""A 200 MB file goes up and comes back through a real uvicorn process without ever sitting whole in its
memory (nor in the test's): bytes are generated on the fly, hashed on both sides, RSS sampled meanwhile."""

from __future__ import annotations

import contextlib
import hashlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest

from tests.support.live_server import LiveServer

pytestmark = pytest.mark.live

MB = 1024 * 1024
FILE_SIZE = 200 * MB
MAX_RSS_GROWTH = 100 * MB
API_KEY = "rk_live_large_files_test_key_012345678ab"  # 40 characters


class PeakRss:
    """Samples the resident memory of a process (and any children) every 50 ms in a thread."""

    def __init__(self, pid: int, interval: float = 0.05) -> None:
        self.process = psutil.Process(pid)
        self.interval = interval
        self.peak = 0
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def current(self) -> int:
        total = self.process.memory_info().rss
        for child in self.process.children(recursive=True):
            with contextlib.suppress(psutil.NoSuchProcess):
                total += child.memory_info().rss
        return total

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self.current())
            self.samples += 1
            self._stop.wait(self.interval)

    def __enter__(self) -> PeakRss:
        self.peak = self.current()
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.current())


def generated_body(total: int, digest: hashlib._Hash) -> Iterator[bytes]:
    """1 MB chunks that differ from each other, hashed as they leave; nothing accumulates."""
    for index in range(total // MB):
        chunk = hashlib.sha256(index.to_bytes(8, "big")).digest() * (MB // 32)
        digest.update(chunk)
        yield chunk


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LiveServer]:
    env = {
        "ROLLOUT_DATA_DIR": str(tmp_path / "data"),
        "ROLLOUT_INIT_API_KEY": API_KEY,
        "ROLLOUT_DEMO": "0",
        "ROLLOUT_DATABASE_URL": "",
        "ROLLOUT_STORAGE_URL": "",
    }
    with LiveServer(env=env) as live:
        yield live


def test_200_mb_upload_and_download_stream_through_a_live_server(server: LiveServer, tmp_path: Path) -> None:
    assert len(API_KEY) == 40
    assert server.process is not None
    headers = {"authorization": f"Bearer {API_KEY}"}
    with httpx.Client(base_url=server.base_url, headers=headers, timeout=60, trust_env=False) as client:
        # Warm the upload and download paths so lazily imported modules do not count as growth.
        warm = client.post("/api/v1/files", params={"name": "warm.bin"}, content=b"w" * MB)
        assert warm.status_code == 201, warm.text
        assert client.get(f"/api/v1/files/{warm.json()['id']}/content").content == b"w" * MB

        sent = hashlib.sha256()
        began = time.monotonic()
        with PeakRss(server.process.pid) as upload_rss:
            baseline = upload_rss.peak
            created = client.post(
                "/api/v1/files", params={"name": "big.bin"}, content=generated_body(FILE_SIZE, sent),
                headers={"content-type": "application/octet-stream"},
            )  # fmt: skip
        upload_seconds = time.monotonic() - began
        assert created.status_code == 201, created.text
        body = created.json()
        assert (body["size"], body["sha256"]) == (FILE_SIZE, sent.hexdigest())

        received = hashlib.sha256()
        size = 0
        began = time.monotonic()
        with (
            PeakRss(server.process.pid) as download_rss,
            client.stream("GET", f"/api/v1/files/{body['id']}/content") as response,
        ):
            assert response.status_code == 200
            assert response.headers["content-length"] == str(FILE_SIZE)
            for chunk in response.iter_bytes():
                received.update(chunk)
                size += len(chunk)
        download_seconds = time.monotonic() - began

    assert (size, received.hexdigest()) == (FILE_SIZE, sent.hexdigest())
    assert upload_rss.samples > 3 and download_rss.samples > 3, "too few RSS samples to trust the peak"
    report = (
        f"baseline {baseline / MB:.0f} MB; upload peak +{(upload_rss.peak - baseline) / MB:.0f} MB "
        f"in {upload_seconds:.1f} s; download peak +{(download_rss.peak - baseline) / MB:.0f} MB "
        f"in {download_seconds:.1f} s"
    )
    print(report)
    assert upload_rss.peak - baseline < MAX_RSS_GROWTH, report
    assert download_rss.peak - baseline < MAX_RSS_GROWTH, report
    blobs = [p for p in (tmp_path / "data" / "files").rglob("*") if p.is_file()]
    assert sorted(p.stat().st_size for p in blobs) == [MB, FILE_SIZE]
