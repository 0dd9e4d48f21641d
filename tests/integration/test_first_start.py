"""First start on an empty data folder: printed credentials work and the demo run is there."""

from __future__ import annotations

import re
import stat

import httpx
import pytest

from tests.support.live_server import LiveServer


@pytest.mark.live
def test_first_start_prints_a_working_key_and_shows_the_demo(tmp_path) -> None:
    data = tmp_path / "data"
    server = LiveServer({"ROLLOUT_DATA_DIR": str(data)}).start()
    try:
        log = server.log_text()
        key = re.search(r"API key:\s+(\S+)", log).group(1)
        assert re.search(r"Sign in:\s+admin@rollout\.local / \S+", log)
        assert server.base_url in log
        credentials = data / "initial-credentials.txt"
        assert stat.S_IMODE(credentials.stat().st_mode) == 0o600
        assert f"api_key={key}" in credentials.read_text()
        with httpx.Client(base_url=server.base_url, trust_env=False,
                          headers={"authorization": f"Bearer {key}"}) as http:
            assert http.get("/healthz").json()["status"] == "ok"
            runs = http.get("/api/v1/runs").json()["items"]
            assert len(runs) == 1 and runs[0]["status"] == "finished"
            detail = http.get(f"/api/v1/runs/{runs[0]['number']}").json()
            assert detail["aggregates"]["by_status"] == {"succeeded": 1} and detail["aggregates"]["mean_reward"] == 1
            rollout = http.get(f"/api/v1/runs/{runs[0]['number']}/rollouts/1").json()
            assert {"message", "tool_call", "tool_result", "llm_call"} <= {e["kind"] for e in rollout["events"]}
            task = http.get("/api/v1/datasets/paper-summary-v1/tasks").json()["items"][0]
            assert http.get(task["files"][0]["download_path"]).status_code == 200
        # A second start keeps the data and does not print secrets again.
        server.restart()
        second_start = server.log_text().split("===== start #2")[-1]
        assert key not in second_start and "initial-credentials.txt" in second_start
        with httpx.Client(base_url=server.base_url, trust_env=False,
                          headers={"authorization": f"Bearer {key}"}) as http:
            assert len(http.get("/api/v1/runs").json()["items"]) == 1
    finally:
        server.close()
