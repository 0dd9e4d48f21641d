"""A reviewer's walk through the UI in a real browser, against a live server holding data created through
the REST API: sign in, Traces (filter, group), a run, a rollout in story and Gantt views, a score, compare,
the training view, and a new dataset with a file. Each page is saved to docs/screenshots/."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import SeededLive, screenshot, sign_in

pytestmark = pytest.mark.browser


def test_sign_in_traces_filter_and_group(page: Any, seeded_live: SeededLive) -> None:
    page.goto("/login")
    screenshot(page, "login")
    sign_in(page, seeded_live.base_url)
    assert "/traces" in page.url
    ws = seeded_live.workspace_id
    page.goto(f"/w/{ws}/traces")
    assert page.locator("#traces-table tbody tr").count() >= 10
    screenshot(page, "traces")

    # Filter: only failed rollouts of the "Paper QA" workflow (HTMX swaps the results, the URL follows).
    page.check("input[name=status][value=failed]")
    page.wait_for_url("**status=failed**")
    page.select_option("select[name=workflow]", "Paper QA")
    page.wait_for_url("**workflow=Paper*QA*")
    rows = page.locator("#traces-table tbody tr")
    rows.first.wait_for()
    assert rows.count() == 1
    assert "failed" in rows.first.inner_text()

    # Group by workflow, no status filter: a row per workflow with its statistics.
    page.goto(f"/w/{ws}/traces?group=workflow")
    table = page.locator("#groups-table")
    assert "Paper QA" in table.inner_text() and "Support bot" in table.inner_text()
    screenshot(page, "traces-grouped")
    page.click("#groups-table >> text=Paper QA")
    page.wait_for_url("**workflow=Paper*QA*")
    assert page.locator("#traces-table tbody tr").count() == 6


def test_run_page_and_rerun_panel(page: Any, seeded_live: SeededLive) -> None:
    sign_in(page, seeded_live.base_url)
    ws, run = seeded_live.workspace_id, seeded_live.data.eval_run
    page.goto(f"/w/{ws}/runs/{run}")
    assert page.locator("#rollouts-table tbody tr").count() == 6
    assert f"only_failed_from={run}" in page.locator("#rerun-sdk").inner_text()
    assert f"--only-failed-from {run}" in page.locator("#rerun-cli").inner_text()
    screenshot(page, "run", full_page=True)
    # Sort by reward, descending: the URL keeps the state.
    page.click("#rollouts-table th >> text=reward")
    page.wait_for_url("**sort=reward**")
    page.click("#tab-by-task")
    page.wait_for_url("**view=tasks**")
    assert page.locator(".task-group").count() == 3
    screenshot(page, "run-by-task", full_page=True)


def test_rollout_flat_and_gantt_and_score(page: Any, seeded_live: SeededLive) -> None:
    sign_in(page, seeded_live.base_url)
    ws, run = seeded_live.workspace_id, seeded_live.data.eval_run
    page.goto(f"/w/{ws}/runs/{run}/rollouts/1")
    story = page.locator("#story")
    assert story.locator(".ev-tool_call").count() == 1
    assert "Found: Attention" in story.locator(".ev-tool_call .tool-result").inner_text()  # paired with its call
    assert story.locator("details.reasoning").count() == 1  # reasoning collapsed
    assert not story.locator("details.reasoning").get_attribute("open")
    assert page.locator("#story .md pre code").count() >= 1  # markdown code block
    page.locator("#story math").first.wait_for(state="attached")  # LaTeX rendered to MathML by KaTeX
    screenshot(page, "rollout", full_page=True)
    # Our own pages never trip the CSP (no inline script or style anywhere, KaTeX outputs MathML).
    violations = [m for m in page.watch.console if "Content Security Policy" in m]
    assert violations == [], violations

    page.click("#tab-gantt")
    page.wait_for_url("**view=gantt**")
    gantt = page.locator("#gantt svg.gantt")
    assert gantt.count() == 1
    assert page.locator("#gantt .g-span").count() == 1
    screenshot(page, "rollout-gantt", full_page=True)

    page.goto(f"/w/{ws}/runs/{run}/rollouts/1")
    page.fill("#score-form input[name=name]", "helpfulness")
    page.fill("#score-form input[name=value]", "0.75")
    page.fill("#score-form input[name=comment]", "clear and short")
    page.click("#score-form button[type=submit]")
    page.wait_for_load_state("networkidle")
    assert "helpfulness" in page.locator("#scores-table").inner_text()
    assert "Score 'helpfulness' added." in page.locator(".flash").inner_text()


def test_failed_rollout_highlights_errors(page: Any, seeded_live: SeededLive) -> None:
    sign_in(page, seeded_live.base_url)
    ws = seeded_live.workspace_id
    page.goto(f"/w/{ws}/rollouts/{seeded_live.data.failed_rollout_id}")
    assert page.locator(".error-banner").count() == 1
    assert page.locator("#story .ev-error").count() >= 2  # the error event and the failed tool call
    screenshot(page, "rollout-failed", full_page=True)


def test_compare_two_attempts(page: Any, seeded_live: SeededLive) -> None:
    sign_in(page, seeded_live.base_url)
    ws, run = seeded_live.workspace_id, seeded_live.data.eval_run
    page.goto(f"/w/{ws}/runs/{run}?view=tasks")
    page.locator(".task-group").first.locator("button[type=submit]").click()
    page.wait_for_url("**/compare?**")
    grid = page.locator("#compare-grid")
    assert grid.locator("thead th").count() == 2
    assert grid.locator("tr.step").count() >= 5  # steps aligned row by row
    assert grid.locator(".diff").count() == 1
    screenshot(page, "compare", full_page=True)


def test_training_view(page: Any, seeded_live: SeededLive) -> None:
    sign_in(page, seeded_live.base_url)
    ws, run = seeded_live.workspace_id, seeded_live.data.training_run
    page.goto(f"/w/{ws}/runs/{run}/training")
    assert page.locator(".step-link").count() == 4
    assert page.locator("#charts figure.chart").count() == 3
    page.locator("#charts svg a").first.click()  # a point on the chart jumps to that step
    page.wait_for_url("**step=0**")
    assert page.locator(".sample-group").count() == 2
    screenshot(page, "training", full_page=True)
    page.goto(f"/w/{ws}/runs/{run}/training?step=1&tab=discarded")
    assert "zero advantage" in page.locator("#discarded-table").inner_text()


def test_create_dataset_with_a_file(page: Any, seeded_live: SeededLive, tmp_path: Any) -> None:
    sign_in(page, seeded_live.base_url)
    ws = seeded_live.workspace_id
    attachment = tmp_path / "contract.txt"
    attachment.write_text("Clause 1: the tenant pays on time.\n")
    page.goto(f"/w/{ws}/datasets")
    page.fill("#create-dataset-form input[name=name]", "contracts-v1")
    page.fill("#create-dataset-form input[name=key]", "clause-1")
    page.fill("#create-dataset-form textarea[name=instruction]", "Who pays?")
    page.fill("#create-dataset-form textarea[name=input]", '{"clause": 1,}')  # invalid JSON first
    page.set_input_files("#create-dataset-form input[name=files]", str(attachment))
    page.click("#create-dataset-form button[type=submit]")
    page.wait_for_load_state("networkidle")
    assert "line 1, column 14" in page.locator("#error-input").inner_text()
    page.fill("#create-dataset-form textarea[name=input]", '{"clause": 1}')
    page.set_input_files("#create-dataset-form input[name=files]", str(attachment))
    page.click("#create-dataset-form button[type=submit]")
    page.wait_for_url("**/datasets/ds_*")
    assert "clause-1" in page.locator("#tasks-table").inner_text()
    assert "contract.txt" in page.locator("#tasks-table").inner_text()
    screenshot(page, "dataset")
    page.click("#tasks-table >> text=clause-1")
    page.wait_for_load_state("networkidle")
    assert page.locator(".files a", has_text="contract.txt").count() == 1
    screenshot(page, "task")


def test_account_page_from_the_header(page: Any, seeded_live: SeededLive) -> None:
    sign_in(page, seeded_live.base_url)
    page.click("header .who a[href='/account']")
    page.wait_for_url("**/account")
    screenshot(page, "account")
    # The server checks what the browser cannot: two different new passwords are refused, nothing changes
    # (the shared server's admin keeps the password the other tests sign in with).
    page.fill("input[name=current]", "whatever-it-is")
    page.fill("input[name=new]", "first-choice-1")
    page.fill("input[name=repeat]", "second-choice-2")
    page.click("form[action='/account/password'] button[type=submit]")
    assert page.locator("p.error").inner_text() == "The two new passwords differ."
