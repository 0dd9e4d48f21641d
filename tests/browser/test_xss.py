"""Stored XSS: payloads in messages, reasoning, tool calls and results, outputs, errors, scores, task
instructions and inputs, golden answers, dataset names, run fields and file names, then every page that
shows them opened in Chromium. Nothing may run: no dialog, no payload console message, `window.__xss`
unset, no javascript: link in the DOM."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.browser.conftest import SeededLive, sign_in

pytestmark = pytest.mark.browser

PAYLOADS = [
    "<script>window.__xss=1;console.log('XSS-script');alert('XSS-script')</script>",
    "<img src=x onerror=\"window.__xss=2;console.log('XSS-img');alert('XSS-img')\">",
    "[click me](javascript:window.__xss=3;alert('XSS-md-link'))",
    "<a href=\"javascript:window.__xss=4;alert('XSS-a')\">click</a>",
    "<svg onload=\"window.__xss=5;alert('XSS-svg')\"><circle r=5></circle></svg>",
    "<details open ontoggle=\"window.__xss=6;alert('XSS-toggle')\"><summary>x</summary></details>",
    "<iframe srcdoc=\"<script>parent.__xss=7;alert('XSS-iframe')</script>\"></iframe>",
    "\"><script>window.__xss=8;alert('XSS-attr')</script>",
    "</textarea><script>window.__xss=9;alert('XSS-textarea')</script>",
    "$\\href{javascript:alert('XSS-katex')}{x}$ and $$\\htmlData{x=y}{z}$$",
]
EVIL = " ".join(PAYLOADS)


def _seed_payloads(seeded_live: SeededLive) -> dict[str, Any]:
    tag = uuid.uuid4().hex[:6]
    with seeded_live.live.client() as client:
        def call(method: str, path: str, **kwargs: Any) -> Any:
            response = client.request(method, path, **kwargs)
            assert response.status_code < 300, f"{method} {path}: {response.text[:500]}"
            return response.json()

        file = call("POST", "/api/v1/files", params={"name": "<img src=x onerror=alert('XSS-file')>.txt"},
                    content=b"x", headers={"content-type": "text/html"})
        name = f"evil<img src=x onerror=alert('XSS-ds')>{tag}"
        dataset = call("POST", "/api/v1/datasets", json={"name": name, "description": EVIL, "tasks": [{
            "key": f"k<img src=x onerror=alert('XSS-key')>{tag}", "instruction": EVIL,
            "input": {"html": EVIL, "<b onmouseover=alert(1)>": "k"}, "expected_output": EVIL, "files": [file["id"]],
            "metadata": {"m": EVIL}}]})
        run = call("POST", "/api/v1/runs", json={
            "dataset": dataset["id"], "workflow_name": f"wf<script>alert('XSS-wf')</script>{tag}",
            "agent_name": "<img src=x onerror=alert('XSS-agent')>", "model": "<svg onload=alert('XSS-model')>",
            "params": {"p": EVIL}, "tags": [EVIL[:100]], "group_id": "<script>alert('XSS-group')</script>",
            "num_repeats": 2})
        tasks = call("GET", f"/api/v1/runs/{run['id']}/tasks")["items"]
        ids = []
        for item in tasks:
            rollout = call("POST", f"/api/v1/runs/{run['id']}/rollouts", json={
                "task_id": item["task"]["id"], "repeat_index": item["repeat_index"], "step": 0,
                "group_key": "<img src=x onerror=alert('XSS-groupkey')>", "metadata": {"m": EVIL}})
            call("POST", f"/api/v1/rollouts/{rollout['id']}/events", json={"events": [
                {"id": "s", "kind": "span", "name": EVIL[:400], "started_at": "2026-01-01T00:00:00Z",
                 "ended_at": "2026-01-01T00:00:01Z"},
                {"id": "m", "kind": "message", "role": "user", "content": EVIL, "parent_id": "s",
                 "started_at": "2026-01-01T00:00:00.1Z"},
                {"id": "m2", "kind": "message", "role": "assistant", "content": [{"type": "text", "text": EVIL},
                                                                                  {"type": "image", "url": EVIL}]},
                {"id": "r", "kind": "reasoning", "content": EVIL},
                {"id": "c", "kind": "tool_call", "name": "<img src=x onerror=alert('XSS-tool')>", "call_id": "c1",
                 "arguments": {"q": EVIL}, "started_at": "2026-01-01T00:00:00.2Z"},
                {"id": "t", "kind": "tool_result", "call_id": "c1", "output": EVIL, "is_error": True,
                 "ended_at": "2026-01-01T00:00:00.5Z", "started_at": "2026-01-01T00:00:00.3Z"},
                {"id": "l", "kind": "llm_call", "model": EVIL[:150], "input": [{"role": "user", "content": EVIL}],
                 "output": [{"role": "assistant", "content": EVIL}], "usage": {"input_tokens": 1}},
                {"id": "e", "kind": "error", "message": EVIL, "traceback": EVIL},
                {"id": "g", "kind": "log", "message": EVIL, "level": "<b>warn</b>"},
            ]})
            call("POST", f"/api/v1/rollouts/{rollout['id']}/finish", json={"output": EVIL, "error": EVIL,
                                                                            "status": "failed"})
            call("POST", f"/api/v1/rollouts/{rollout['id']}/scores", json={
                "name": "<script>alert('XSS-score')</script>", "value": EVIL[:200], "data_type": "text",
                "comment": EVIL, "source": "<img src=x onerror=alert('XSS-src')>"})
            call("POST", f"/api/v1/rollouts/{rollout['id']}/scores", json={"name": "reward", "value": 0.5})
            ids.append(rollout["id"])
        keys = call("GET", f"/api/v1/datasets/{dataset['id']}/tasks")["items"]
    return {"run": run, "dataset": dataset, "ids": ids, "key": keys[0]["key"], "file": file}


def test_stored_payloads_never_execute(page: Any, seeded_live: SeededLive) -> None:
    made = _seed_payloads(seeded_live)
    ws, run, ids = seeded_live.workspace_id, made["run"]["number"], made["ids"]
    from urllib.parse import quote

    ds, key = made["dataset"]["id"], quote(made["key"], safe="")
    sign_in(page, seeded_live.base_url)
    pages = [
        f"/w/{ws}/traces", f"/w/{ws}/traces?group=workflow", f"/w/{ws}/traces?group=agent",
        f"/w/{ws}/traces?group=model", f"/w/{ws}/traces?q=script", f"/w/{ws}/runs", f"/w/{ws}/runs/{run}",
        f"/w/{ws}/runs/{run}?view=tasks", f"/w/{ws}/runs/{run}/rollouts/1", f"/w/{ws}/runs/{run}/rollouts/1?raw=1",
        f"/w/{ws}/runs/{run}/rollouts/1?md=0&think=0&latex=0&code=0", f"/w/{ws}/rollouts/{ids[1]}?view=gantt",
        f"/w/{ws}/rollouts/{ids[0]}/events/m", f"/w/{ws}/rollouts/{ids[0]}/events/t",
        f"/w/{ws}/compare?ids={ids[0]}&ids={ids[1]}", f"/w/{ws}/runs/{run}/training",
        f"/w/{ws}/datasets", f"/w/{ws}/datasets/{ds}", f"/w/{ws}/datasets/{ds}/tasks/{key}",
        f"/w/{ws}/datasets/{ds}/tasks/{key}/edit", f"/w/{ws}/settings",
    ]
    watch = page.watch
    for path in pages:
        response = page.goto(path)
        assert response is not None and response.status == 200, f"{path}: {response and response.status}"
        page.wait_for_load_state("networkidle")
        # Open every <details> (reasoning, think blocks) and hover the page: handlers would fire now.
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        page.mouse.move(300, 300)
        assert page.evaluate("window.__xss") is None, path
        assert page.locator("a[href^='javascript:' i]").count() == 0, path
        assert page.locator("iframe, object, embed").count() == 0, path
        assert page.locator("script:not([src])").count() == 0, path  # no inline script element at all
        csp = response.headers.get("content-security-policy", "")
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp, path
    assert watch.dialogs == [], watch.dialogs
    assert not [m for m in watch.console if "XSS" in m], watch.console
    assert watch.page_errors == [], watch.page_errors

    # The payload text is shown to the reader, as text.
    page.goto(f"/w/{ws}/runs/{run}/rollouts/1?md=0")
    assert "window.__xss=1" in page.locator("#story").inner_text()
    # The file downloads as an attachment, never rendered as a page of this site.
    download = page.request.get(f"/w/{ws}/files/{made['file']['id']}")
    assert download.headers["content-disposition"].startswith("attachment")
