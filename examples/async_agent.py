"""Many attempts at once with asyncio: every task of a dataset, several repeats, 50 at a time.

export ROLLOUT_BASE_URL=http://127.0.0.1:8000 ROLLOUT_API_KEY=rk_...
python examples/seed_loop.py        # creates the dataset paper-summary-v1 once
python examples/async_agent.py
"""

from __future__ import annotations

import asyncio
import random

import rollout.aio


async def solve(run: rollout.aio.AsyncRun, item: rollout.RunTask, slots: asyncio.Semaphore) -> None:
    async with slots, run.start_rollout(item) as attempt:
        attempt.message(item.task.instruction, role="user")
        files = await attempt.materialize_files()
        with attempt.span("read"):
            call = attempt.tool_call("read_pdf", {"path": str(files[0])})
            await asyncio.sleep(random.uniform(0.01, 0.05))  # the tool's work
            call.result(files[0].read_bytes()[:60].decode(errors="replace"))
        answer = f"{(item.task.input or {}).get('title')} in one sentence."
        attempt.message(answer, role="assistant")
        attempt.score("reward", random.random())
        await attempt.finish(output=answer)


async def main() -> None:
    client = rollout.aio.AsyncClient()
    async with client.start_run("paper-summary-v1", workflow_name="Paper QA (async)", num_repeats=4) as run:
        slots = asyncio.Semaphore(50)
        await asyncio.gather(*(solve(run, item, slots) for item in run.tasks))
    await client.flush()
    print(f"run {run.number}: {run.url}")
    await client.aclose()


if __name__ == "__main__":
    asyncio.run(main())
