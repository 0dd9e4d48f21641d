"""The seed loop from the design brief, unchanged, against a running server.

    export ROLLOUT_BASE_URL=http://127.0.0.1:8000 ROLLOUT_API_KEY=rk_...
    python examples/seed_loop.py

It creates the dataset `paper-summary-v1` (three tasks, each with a PDF attached as a file, not
inlined into a prompt) the first time, then runs every task once and prints the run's URL.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import rollout

DATASET = "paper-summary-v1"


def fake_pdf(title: str, pages: int) -> bytes:
    body = "".join(f"Page {n} of {title}. " for n in range(1, pages + 1))
    return f"%PDF-1.4\n% {title}\n{body}\n%%EOF\n".encode()


def ensure_dataset(name: str = DATASET) -> rollout.Dataset:
    """Get the dataset, creating it with its files the first time."""
    try:
        return rollout.get_dataset(name)
    except rollout.NotFoundError:
        pass
    papers = [
        ("attention", "Attention is all you need", 3),
        ("resnet", "Deep residual learning", 5),
        ("survey", "A forty-page survey of agents", 40),
    ]
    tasks = [
        {
            "key": key,
            "instruction": f"Summarise the paper '{title}' in one sentence.",
            "input": {"title": title, "pages": pages},
            "files": [(f"{key}.pdf", fake_pdf(title, pages), "application/pdf")],
            "expected_output": {"mentions": title.split()[0].lower()},
            "split": "test",
        }
        for key, title, pages in papers
    ]
    try:
        return rollout.create_dataset(name, tasks, description="Summarise papers (seed loop example)")
    except rollout.ConflictError:  # created meanwhile by another process
        return rollout.get_dataset(name)


def answer_task(instruction: str, input: dict[str, Any] | None, files: list[Path]) -> dict[str, Any]:
    """Stand-in for an agent: reads the attached PDF and 'summarises' it."""
    text = files[0].read_bytes().decode(errors="replace")
    pages = text.count("Page ")
    title = (input or {}).get("title", "?")
    return {"summary": f"{title}: {pages} pages read.", "pages": pages}


def main() -> None:
    ensure_dataset()

    run = rollout.start_run("paper-summary-v1", workflow_name="Paper QA", group_id="thread-42")
    for task in run.tasks:
        attempt = run.start_rollout(task)
        files = attempt.materialize_files()
        try:
            attempt.message("Starting task", role="system")
            result = answer_task(task.task.instruction, task.task.input, files)
            attempt.finish(output=result)
        except Exception as error:
            attempt.error(str(error))
            attempt.finish(status="failed", error=str(error))
            raise

    rollout.flush()
    print(f"run {run.number}: {run.url}")


if __name__ == "__main__":
    main()
