"""Dataset import and export throughput: 100,000 tasks sharing 1,000 files, as a JSONL zip, through the API.

Starts a real uvicorn process (SQLite by default, `--postgres` for a throwaway PostgreSQL), builds a zip of
`tasks.jsonl` + `files/<sha256>/<name>` on disk, then measures, as a client would: the import into a new
dataset, the export streamed back, and the re-import of that export into another dataset. Reports tasks/s and
the server's peak RSS (target ≥ 5,000 tasks/s and ≤ 300 MB), sampled with psutil over the server's process tree.

    python bench/datasets.py                     # 100,000 tasks, 1,000 files, SQLite
    python bench/datasets.py --tasks 20000 --postgres
"""

from __future__ import annotations

import argparse
import hashlib
import io
import shutil
import tempfile
import time
import zipfile
from pathlib import Path

import orjson
from _common import TreeSampler, machine_summary, print_table, start_postgres, start_service

TARGET_RATE = 5_000
TARGET_RSS = 300 * 2**20


def build_zip(path: Path, tasks: int, files: int, file_bytes: int) -> None:
    blobs = []
    for n in range(files):
        data = (f"file {n} ".encode() * (file_bytes // 8 + 1))[:file_bytes]
        blobs.append((hashlib.sha256(data).hexdigest(), f"doc-{n}.txt", data))
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        with archive.open("tasks.jsonl", "w", force_zip64=True) as out:
            chunk = io.BytesIO()
            for n in range(tasks):
                sha, name, _ = blobs[n % files]
                line = {"key": f"task-{n:07d}", "instruction": f"Answer question {n} using the document.",
                        "input": {"question": n, "tags": ["bench", "q"]}, "expected_output": f"answer {n}",
                        "metadata": {"source": "bench", "n": n}, "split": "train" if n % 10 else "test",
                        "files": [f"files/{sha}/{name}"]}
                chunk.write(orjson.dumps(line) + b"\n")
                if chunk.tell() > 1 << 20:
                    out.write(chunk.getvalue())
                    chunk = io.BytesIO()
            out.write(chunk.getvalue())
        for sha, name, data in blobs:
            archive.writestr(f"files/{sha}/{name}", data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--files", type=int, default=1_000)
    parser.add_argument("--file-bytes", type=int, default=16 * 1024)
    parser.add_argument("--postgres", action="store_true")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-datasets-"))
    postgres = start_postgres() if args.postgres else None
    try:
        source = work / "source.zip"
        build_zip(source, args.tasks, args.files, args.file_bytes)
        url = postgres.create_database("bench_datasets") if postgres else None
        service = start_service(work / "data", database_url=url)
        client = service.new_client(timeout=3600)
        rows: list[list[object]] = []
        try:
            def measure(label: str, action: object) -> None:
                sampler = TreeSampler(service.pid).start()
                started = time.perf_counter()
                size = action()  # type: ignore[operator]
                seconds = time.perf_counter() - started
                sampler.stop()
                rate = args.tasks / seconds
                rows.append([label, f"{args.tasks:,}", f"{seconds:.1f}", f"{rate:,.0f}", f"{size / 2**20:.1f}",
                             f"{sampler.peak_rss / 2**20:.0f}",
                             "yes" if rate >= TARGET_RATE and sampler.peak_rss <= TARGET_RSS else "no"])

            def upload(name: str, path: Path) -> int:
                with path.open("rb") as body:
                    response = client.post(f"/api/v1/datasets/{name}/import", params={"create": "true"},
                                           content=iter(lambda: body.read(1 << 20), b""),
                                           headers={"content-type": "application/zip"})
                response.raise_for_status()
                assert response.json()["tasks"] == args.tasks, response.text
                return path.stat().st_size

            exported = work / "export.zip"

            def download() -> int:
                with client.stream("GET", "/api/v1/datasets/bench/export") as response, exported.open("wb") as out:
                    response.raise_for_status()
                    for chunk in response.iter_bytes(1 << 20):
                        out.write(chunk)
                return exported.stat().st_size

            measure("import (new dataset)", lambda: upload("bench", source))
            measure("export (jsonl zip)", download)
            measure("re-import of the export", lambda: upload("bench-copy", exported))
        finally:
            client.close()
            service.close()
        print(machine_summary())
        print(f"{args.tasks:,} tasks sharing {args.files:,} files of {args.file_bytes:,} bytes, "
              f"{'PostgreSQL' if postgres else 'SQLite'}")
        print_table(["step", "tasks", "seconds", "tasks/s", "MB", "peak server RSS MB", "target met"], rows)
    finally:
        if postgres is not None:
            postgres.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
