"""Re-running only the failed tasks of a run through the Python SDK, against a live server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.sdk.helpers import make_client, unique

pytestmark = pytest.mark.live


def test_rerun_only_the_failed_tasks_through_the_sdk(live_server: Any, tmp_path: Path) -> None:
    client = make_client(live_server, tmp_path)
    try:
        name = unique("rerun")
        client.create_dataset(name, [{"key": f"t{i}", "instruction": f"task {i}",
                                      "files": [(f"f{i}.txt", f"bytes {i}".encode())]} for i in range(5)])
        first = client.start_run(name, workflow_name="nightly")
        for task in first.tasks:
            attempt = first.start_rollout(task)
            failed = task.task.key in ("t1", "t3")
            attempt.finish(status="failed" if failed else None, error="boom" if failed else None, wait=True)
        first.finish()

        rerun = client.start_run(name, only_failed_from=first.number)
        assert rerun.rerun_of is not None and rerun.rerun_of.id == first.id
        keys = [t.task.key for t in rerun.tasks]
        assert keys == ["t1", "t3"]
        attempt = rerun.start_rollout(rerun.tasks[0])
        paths = attempt.materialize_files()
        assert [p.read_bytes() for p in paths] == [b"bytes 1"]
        attempt.finish(output="fixed", wait=True)
    finally:
        client.close()
