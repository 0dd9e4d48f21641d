"""Running the installed `rollout` executable against a live server, as a user's shell would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest


def executable() -> str:
    candidate = Path(sys.executable).parent / "rollout"
    if candidate.exists():
        return str(candidate)
    pytest.fail("the `rollout` executable is not installed next to this Python: pip install -e 'sdk-python[cli]'")


class Cli:
    """Runs `rollout ...` with a clean environment: no inherited ROLLOUT_* settings, a config file of its own."""

    def __init__(self, live: Any, home: Path) -> None:
        self.live = live
        self.config = home / "config.json"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("ROLLOUT_")}
        self.env.update(
            ROLLOUT_CONFIG_FILE=str(self.config), ROLLOUT_CACHE_DIR=str(home / "cache"), COLUMNS="200", NO_COLOR="1"
        )

    def __call__(
        self, *args: str, expect: int = 0, auth: bool = True, stdin: str | None = None, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        env = dict(self.env)
        if auth:
            env.update(ROLLOUT_BASE_URL=self.live.base_url, ROLLOUT_API_KEY=self.live.api_key)
        done = subprocess.run(
            [executable(), *args], env=env, capture_output=True, text=True, input=stdin, timeout=timeout
        )
        assert done.returncode == expect, f"rollout {' '.join(args)} -> {done.returncode}\n{done.stdout}\n{done.stderr}"
        return done

    def json(self, *args: str) -> Any:
        return json.loads(self(*args, "--json").stdout)
