"""Compare 2-4 rollouts side by side: steps aligned, outputs diffed, scores, tokens and cost in one row."""

from __future__ import annotations

import re
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from ...api.deps import Ctx
from ...errors import NotFound
from ...models import Run
from ...rollouts import service as rollouts
from ...rollouts.repository import RolloutRepository
from ..align import align
from ..deps import WorkspaceAccess
from ..render import RenderOptions
from ..story import build_story
from ..templating import render
from ..views import as_text, diff_html

router = APIRouter()

MAX_COMPARED = 4
EVENTS_COMPARED = 300
_HANDLE = re.compile(r"^\s*(?:run\s*)?(\d+)\s*[/:]\s*(?:attempt\s*)?(\d+)\s*$", re.IGNORECASE)


def _refs(params: Any) -> list[str]:
    refs: list[str] = []
    for value in params.getlist("ids"):
        refs.extend(part.strip() for part in value.replace(",", " ").split() if part.strip())
    return list(dict.fromkeys(refs))[:MAX_COMPARED]


@router.get("/w/{workspace_id}/compare")
def compare(request: Request, access: WorkspaceAccess, ctx: Ctx) -> Response:
    options = RenderOptions.from_query(request.query_params)
    refs = _refs(request.query_params)
    problems: list[str] = []
    columns: list[dict[str, Any]] = []
    with ctx.db.reading() as session:
        repo = RolloutRepository(session)
        for ref in refs:
            try:
                handle = _HANDLE.match(ref)
                rollout = (rollouts.get_by_attempt(session, access.workspace_id, handle.group(1), int(handle.group(2)))
                           if handle else rollouts.get_rollout(session, access.workspace_id, ref))
            except NotFound:
                problems.append(f"No rollout '{ref}' in this workspace (use an ID like ro_… or run/attempt like 47/3).")
                continue
            events = repo.events_page(rollout.id, after=None, limit=EVENTS_COMPARED)
            columns.append({
                "rollout": rollouts.rollouts_out(session, [rollout], "")[0], "run": session.get(Run, rollout.run_id),
                "scores": repo.scores_of([rollout.id])[rollout.id], "story": build_story(session, rollout.id, events),
                "truncated": rollout.event_count > EVENTS_COMPARED,
            })
    rows = align([c["story"] for c in columns]) if len(columns) >= 2 else []
    score_names = list(dict.fromkeys(s.name for c in columns for s in c["scores"]))
    base_text = as_text(columns[0]["rollout"].output) if columns else ""
    for column in columns[1:]:
        column["diff"] = diff_html(base_text, as_text(column["rollout"].output))
    tasks = {c["rollout"].task_id for c in columns}
    return render(request, "compare/page.html", {
        "access": access, "nav": "compare", "columns": columns, "rows": rows, "score_names": score_names,
        "problems": problems, "options": options, "refs": refs, "same_task": len(tasks) == 1,
    })
