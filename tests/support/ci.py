"""The CI rule "a skipped postgres, s3 or browser test is a failure", as helpers for conftest.

Locally, tests that need a missing server skip with a reason. In CI (ROLLOUT_TEST_REQUIRE_ALL=1)
a skip means the harness silently tested less, so the session fails and lists what was skipped.

    # tests/conftest.py
    def pytest_sessionfinish(session, exitstatus):
        fail_on_skips(session)
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import pytest

REQUIRE_ALL_ENV = "ROLLOUT_TEST_REQUIRE_ALL"


def require_all() -> bool:
    """True when every test must run (CI): ROLLOUT_TEST_REQUIRE_ALL=1/true/yes."""
    return os.environ.get(REQUIRE_ALL_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


def skip_reason(report: Any) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # (path, lineno, reason)
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def skipped_reports(terminalreporter: Any, only_markers: Iterable[str] | None = None) -> list[Any]:
    """Skipped test and collection reports, optionally only those carrying one of `only_markers`.

    Collection-level skips (module `pytest.skip(allow_module_level=True)`, importorskip) carry no
    markers and always count.
    """
    reports = [r for r in terminalreporter.stats.get("skipped", []) if not hasattr(r, "wasxfail")]
    if only_markers is None:
        return reports
    wanted = set(only_markers)
    return [
        r
        for r in reports
        if getattr(r, "when", "collect") == "collect" or wanted & set(getattr(r, "keywords", {}))
    ]


def fail_on_skips(
    session: pytest.Session,
    terminalreporter: Any | None = None,
    *,
    only_markers: Iterable[str] | None = None,
) -> list[Any]:
    """When require_all(), turn any skip into exit status 1 and print the skipped tests.

    Call from `pytest_sessionfinish(session, exitstatus)` (or `pytest_terminal_summary`, passing
    `terminalreporter._session`). Returns the offending reports (empty when the rule is off).
    """
    if not require_all():
        return []
    reporter = terminalreporter or session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:  # -p no:terminal
        return []
    offending = skipped_reports(reporter, only_markers)
    if not offending:
        return []
    reporter.ensure_newline()
    reporter.write_sep(
        "=", f"{REQUIRE_ALL_ENV}=1: {len(offending)} skipped test(s) count as failures", red=True
    )
    for report in offending:
        reporter.write_line(f"SKIPPED {report.nodeid or report.fspath}: {skip_reason(report)}")
    reporter.write_line(
        "Every postgres, s3 and browser test must run in CI: install what the reasons name "
        f"(.ci/run does), or unset {REQUIRE_ALL_ENV} to allow skips locally."
    )
    if session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    return offending
