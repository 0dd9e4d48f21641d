"""A failed rollout becomes a regression task; a run's failures are promoted in one version; re-runs."""

from __future__ import annotations

import uuid

from tests.api.factories import (
    assert_problem,
    create_dataset,
    finish_rollout,
    list_run_tasks,
    start_rollout,
    start_run,
    upload_file,
)
from tests.conftest import Tenant
from tests.datasets.helpers import API


async def test_a_failed_rollout_becomes_a_regression_task_that_a_new_run_finds(api: Tenant) -> None:
    pdf = await upload_file(api.client, b"%PDF-1.4 forty pages", "paper.pdf", "application/pdf")
    source = await create_dataset(api.client, tasks=[
        {"key": "paper-qa", "instruction": "Who wrote it?", "input": {"q": "author"}, "files": [pdf["id"]]},
        {"key": "easy", "instruction": "Say hi"}])
    run = await start_run(api.client, source)
    tasks = {t["key"]: t for t in source["tasks"]}
    failed = await start_rollout(api.client, run["id"], tasks["paper-qa"]["id"])
    await finish_rollout(api.client, failed["id"], status="failed", output="Nobody", error="wrong author")
    ok = await start_rollout(api.client, run["id"], tasks["easy"]["id"])
    await finish_rollout(api.client, ok["id"], output="hi")

    regression = f"regressions-{uuid.uuid4().hex[:6]}"
    response = await api.client.post(f"{API}/rollouts/{failed['id']}/promote", json={
        "dataset": regression, "use_output_as_expected": True, "message": "author bug"})
    assert response.status_code == 201, response.text
    promoted = response.json()
    assert promoted["created_dataset"] and promoted["keys"] == ["paper-qa"] and promoted["version"] == 1

    new_run = await start_run(api.client, regression)
    items = await list_run_tasks(api.client, new_run["id"])
    assert [i["task"]["key"] for i in items] == ["paper-qa"]
    task = items[0]["task"]
    assert task["instruction"] == "Who wrote it?" and task["input"] == {"q": "author"}
    assert task["expected_output"] == "Nobody"
    assert task["metadata"]["promoted_from"]["rollout_id"] == failed["id"]
    assert [f["id"] for f in task["files"]] == [pdf["id"]]
    content = await api.client.get(f"{API}/files/{task['files'][0]['id']}/content")
    assert content.content == b"%PDF-1.4 forty pages"

    # Promoting again gives the task a new revision (a new version), not a conflict.
    again = (await api.client.post(f"{API}/rollouts/{failed['id']}/promote", json={"dataset": regression})).json()
    assert (again["version"], again["updated"]) == (2, 1)


async def test_a_runs_failures_and_low_rewards_are_promoted_in_one_version(api: Tenant) -> None:
    source = await create_dataset(api.client, with_file=False, tasks=[
        {"key": k, "instruction": k} for k in ("a", "b", "c", "d")])
    run = await start_run(api.client, source)
    tasks = {t["key"]: t["id"] for t in source["tasks"]}
    outcomes = {"a": ("failed", None), "b": ("errored", None), "c": ("succeeded", 0.2), "d": ("succeeded", 0.9)}
    for key, (status, reward) in outcomes.items():
        rollout = await start_rollout(api.client, run["id"], tasks[key])
        if reward is not None:
            await api.client.post(f"{API}/rollouts/{rollout['id']}/scores", json={"name": "reward", "value": reward})
        await finish_rollout(api.client, rollout["id"], status=status)
    adhoc = await start_run(api.client)
    stray = await start_rollout(api.client, adhoc["id"], input={"instruction": "prod question", "q": 1})
    await finish_rollout(api.client, stray["id"], status="failed")

    name = f"reg-{uuid.uuid4().hex[:6]}"
    result = (await api.client.post(f"{API}/runs/{run['number']}/promote",
                                    json={"dataset": name, "reward_below": 0.5})).json()
    assert sorted(result["keys"]) == ["a", "b", "c"] and result["version"] == 1
    more = (await api.client.post(f"{API}/runs/{adhoc['id']}/promote", json={"dataset": name})).json()
    assert more["keys"] == [f"run{adhoc['number']}-attempt1"] and more["version"] == 2
    task = (await api.client.get(f"{API}/datasets/{name}/tasks/{more['keys'][0]}")).json()
    assert task["instruction"] == "prod question" and task["input"] == {"instruction": "prod question", "q": 1}
    nothing = await api.client.post(f"{API}/runs/{run['id']}/promote", json={"dataset": name,
                                                                           "statuses": ["cancelled"]})
    assert_problem(nothing, 422, "statuses")

    # Re-running below the threshold as well as the failures keeps the link between the runs.
    rerun = await start_run(api.client, None, only_failed_from=str(run["number"]), reward_below=0.5)
    assert rerun["rerun_of"]["id"] == run["id"] and rerun["rerun_reward_below"] == 0.5
    assert sorted(i["task"]["key"] for i in await list_run_tasks(api.client, rerun["id"])) == ["a", "b", "c"]
