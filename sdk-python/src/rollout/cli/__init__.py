"""The `rollout` command line (installed with `pip install 'rollout-sdk[cli]'`)."""

from __future__ import annotations

import sys


def main() -> None:
    try:
        from .app import app
    except ImportError as error:  # typer or rich missing
        sys.stderr.write(
            f"The rollout CLI needs its extra dependencies ({error.name or error}): pip install 'rollout-sdk[cli]'\n"
        )
        raise SystemExit(1) from None
    app()


__all__ = ["main"]
