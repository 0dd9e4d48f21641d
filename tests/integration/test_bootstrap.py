"""First start when several worker processes of one server reach an empty database at once."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from rollout_server.bootstrap import ensure_initial_setup
from rollout_server.context import AppContext


def test_concurrent_first_starts_make_one_admin_and_never_fail(ctx: AppContext) -> None:
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: ensure_initial_setup(ctx), range(4)))
    firsts = [r for r in results if r is not None]
    assert len(firsts) == 1
    assert firsts[0].credentials_path.exists()
