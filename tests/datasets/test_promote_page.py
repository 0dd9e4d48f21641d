"""The rollout page's "Promote to dataset" form: CSRF-checked, members only, same result as the API."""

from __future__ import annotations

import uuid

import httpx

from tests.ui.conftest import World, csrf_of
from tests.ui.seed import Seeded


async def test_promote_form_on_the_rollout_page(world: World, seeded: Seeded, owner: httpx.AsyncClient,
                                                viewer: httpx.AsyncClient) -> None:
    ws, rid = world.workspace_id, seeded.rollout_ids[1]
    page = await owner.get(f"/w/{ws}/rollouts/{rid}")
    assert 'id="promote-form"' in page.text
    token = await csrf_of(owner, f"/w/{ws}/rollouts/{rid}")
    name = f"regressions-{uuid.uuid4().hex[:6]}"
    no_token = await owner.post(f"/w/{ws}/rollouts/{rid}/promote", data={"dataset": name})
    assert no_token.status_code == 403
    response = await owner.post(f"/w/{ws}/rollouts/{rid}/promote", data={
        "csrf_token": token, "dataset": name, "use_output_as_expected": "1", "message": "from the page"})
    assert response.status_code == 303, response.text
    landed = await owner.get(response.headers["location"])
    assert landed.status_code == 200 and f"Promoted to {name}" in landed.text
    tasks = (await world.api.get(f"/api/v1/datasets/{name}/tasks")).json()["items"]
    assert len(tasks) == 1 and tasks[0]["metadata"]["promoted_from"]["rollout_id"] == rid

    bad = await owner.post(f"/w/{ws}/rollouts/{rid}/promote", data={"csrf_token": token, "dataset": ""})
    assert bad.status_code == 422 and 'id="promote-form"' in bad.text

    assert 'id="promote-form"' not in (await viewer.get(f"/w/{ws}/rollouts/{rid}")).text
    viewer_token = await csrf_of(viewer, f"/w/{ws}/rollouts/{rid}")
    refused = await viewer.post(f"/w/{ws}/rollouts/{rid}/promote", data={"csrf_token": viewer_token,
                                                                         "dataset": name})
    assert refused.status_code == 403
