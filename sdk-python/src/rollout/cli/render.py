"""Terminal rendering: a rollout's trace as an indented story, runs and rollouts as tables."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from rich.console import Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from .._types import Event, Rollout, RolloutDetail, RunInfo
from .common import short, when

STATUS_STYLE = {
    "succeeded": "green",
    "finished": "green",
    "failed": "red",
    "errored": "red",
    "cancelled": "yellow",
    "running": "cyan",
}
KIND_STYLE = {
    "message": "bold",
    "reasoning": "dim italic",
    "llm_call": "magenta",
    "tool_call": "blue",
    "tool_result": "blue",
    "error": "bold red",
    "log": "dim",
    "span": "cyan",
}


def status_text(status: str) -> Text:
    return Text(status, style=STATUS_STYLE.get(status, ""))


def money(value: float | None) -> str:
    if not value:
        return ""
    return f"${value:.4f}" if value < 1 else f"${value:.2f}"


def millis(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:.0f} ms" if value < 10_000 else f"{value / 1000:.1f} s"


def runs_table(runs: Iterable[RunInfo]) -> Table:
    table = Table(box=None, header_style="bold", pad_edge=False)
    for column in ("run", "status", "workflow", "dataset", "agent", "model", "started"):
        table.add_column(column)
    for run in runs:
        dataset = f"{run.dataset_name} v{run.dataset_version}" if run.dataset_name else ""
        agent = " ".join(x for x in (run.agent_name, run.agent_version) if x)
        table.add_row(
            str(run.number),
            status_text(run.status),
            run.workflow_name or "",
            dataset,
            agent,
            run.model or "",
            when(run.created_at),
        )
    return table


def rollouts_table(rollouts: Iterable[Rollout]) -> Table:
    table = Table(box=None, header_style="bold", pad_edge=False)
    for column in ("handle", "status", "task", "reward", "events", "tokens", "cost", "latency", "id"):
        table.add_column(column)
    for r in rollouts:
        table.add_row(
            f"{r.run_number}/{r.attempt}",
            status_text(r.status),
            r.task_key or "",
            "" if r.reward is None else f"{r.reward:g}",
            str(r.event_count),
            str(r.total_tokens or ""),
            money(r.cost),
            millis(r.latency_ms),
            r.id,
        )
    return table


def run_panel(run: RunInfo) -> Panel:
    lines = Table.grid(padding=(0, 2))
    lines.add_column(style="bold")
    lines.add_column()
    lines.add_row("run", f"{run.number}  ({run.id})")
    lines.add_row("status", status_text(run.status))
    if run.dataset_name:
        lines.add_row("dataset", f"{run.dataset_name} v{run.dataset_version}")
    for label, value in (
        ("workflow", run.workflow_name),
        ("group", run.group_id),
        ("agent", run.agent_name),
        ("agent version", run.agent_version),
        ("model", run.model),
    ):
        if value:
            lines.add_row(label, value)
    if run.tags:
        lines.add_row("tags", ", ".join(run.tags))
    if run.rerun_of is not None:
        lines.add_row("re-run of", f"run {run.rerun_of.number}")
    lines.add_row("started", when(run.created_at))
    if run.finished_at:
        lines.add_row("finished", when(run.finished_at))
    if run.task_count is not None:
        lines.add_row("tasks", str(run.task_count))
    agg = run.aggregates
    if agg is not None:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(agg.by_status.items())) or "none yet"
        lines.add_row("rollouts", f"{agg.rollout_count} ({counts})")
        if agg.mean_reward is not None:
            lines.add_row("mean reward", f"{agg.mean_reward:.4g} over {agg.scored_count} scored")
        if agg.total_tokens:
            lines.add_row("tokens", f"{agg.input_tokens} in / {agg.output_tokens} out")
        if agg.cost:
            lines.add_row("cost", money(agg.cost))
        if agg.latency_p50_ms is not None:
            lines.add_row("latency", f"p50 {millis(agg.latency_p50_ms)}, p95 {millis(agg.latency_p95_ms)}")
    lines.add_row("url", run.url)
    return Panel(lines, title=f"run {run.number}", title_align="left", expand=False)


def _depths(events: list[Event]) -> dict[str, int]:
    by_id = {e.id: e for e in events}
    depths: dict[str, int] = {}

    def depth(event: Event, guard: int = 0) -> int:
        if event.id in depths:
            return depths[event.id]
        parent = by_id.get(event.parent_id or "")
        value = 0 if parent is None or guard > 50 else depth(parent, guard + 1) + 1
        depths[event.id] = value
        return value

    for event in events:
        depth(event)
    return depths


def _body(event: Event, width: int) -> Text:
    extra: dict[str, Any] = event.model_extra or {}
    kind = event.kind
    text = Text()
    if kind == "message":
        text.append(f"{extra.get('role', '?')}: ", style="bold")
        text.append(_content(extra.get("content"), width))
    elif kind == "reasoning":
        text.append(_content(extra.get("content"), width), style="dim italic")
    elif kind == "llm_call":
        usage = extra.get("usage") or {}
        parts = [str(extra.get("model") or "model?")]
        if usage:
            parts.append(f"{usage.get('input_tokens', 0)}→{usage.get('output_tokens', 0)} tok")
        if extra.get("cost"):
            parts.append(money(float(extra["cost"])))
        if event.duration_ms is not None:
            parts.append(millis(event.duration_ms))
        text.append(" · ".join(parts), style="magenta")
        calls = extra.get("tool_calls") or []
        output = extra.get("output")
        preview = _llm_output(output)
        if preview:
            text.append("  " + short(preview, width))
        if calls:
            names = ", ".join(str(c.get("name")) for c in calls if isinstance(c, dict))
            text.append(f"  calls: {names}", style="blue")
    elif kind == "tool_call":
        text.append(f"{event.name}(", style="blue")
        text.append(short(extra.get("arguments"), width))
        text.append(")", style="blue")
    elif kind == "tool_result":
        style = "red" if extra.get("is_error") else ""
        text.append("→ ", style="blue")
        text.append(short(extra.get("output"), width), style=style)
        if event.duration_ms is not None:
            text.append(f"  ({millis(event.duration_ms)})", style="dim")
    elif kind == "error":
        kind_name = extra.get("type")
        text.append(f"{kind_name}: " if kind_name else "", style="bold red")
        text.append(short(extra.get("message"), width), style="red")
    elif kind == "log":
        text.append(f"[{extra.get('level', 'info')}] ", style="dim")
        text.append(short(extra.get("message"), width))
    elif kind == "span":
        text.append(event.name or "span", style="cyan")
        if event.duration_ms is not None:
            text.append(f"  ({millis(event.duration_ms)})", style="dim")
    else:
        text.append(short(extra, width))
    return text


def _content(content: Any, width: int) -> str:
    if isinstance(content, list):  # multimodal parts
        content = " ".join(str(p.get("text", f"<{p.get('type')}>")) if isinstance(p, dict) else str(p) for p in content)
    return short(content, width)


def _llm_output(output: Any) -> Any:
    if isinstance(output, dict):
        return output.get("content") or ""
    if isinstance(output, list):  # Responses API items
        texts = []
        for item in output:
            if isinstance(item, dict):
                for part in item.get("content") or []:
                    if isinstance(part, dict) and part.get("text"):
                        texts.append(part["text"])
        return " ".join(texts)
    return output


def trace_lines(events: list[Event], *, width: int = 100) -> Table:
    table = Table.grid(padding=(0, 1))
    table.add_column(justify="right", style="dim")
    table.add_column(style="dim")
    table.add_column()
    table.add_column()
    depths = _depths(events)
    for event in events:
        stamp = event.started_at.astimezone().strftime("%H:%M:%S.%f")[:-3] if event.started_at else ""
        indent = "  " * depths.get(event.id, 0)
        kind = Text(indent + event.kind, style=KIND_STYLE.get(event.kind, ""))
        table.add_row(str(event.seq), stamp, kind, _body(event, width))
    return table


def rollout_view(detail: RolloutDetail, *, full: bool = False) -> Group:
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    head.add_row("rollout", f"run {detail.run_number} / attempt {detail.attempt}  ({detail.id})")
    head.add_row("status", status_text(detail.status))
    if detail.task_key:
        head.add_row("task", f"{detail.task_key}" + (f" (repeat {detail.repeat_index})" if detail.repeat_index else ""))
    if detail.reward is not None:
        head.add_row("reward", f"{detail.reward:g}")
    if detail.step is not None or detail.group_key:
        head.add_row("training", f"step {detail.step}  group {detail.group_key or ''}")
    if detail.total_tokens:
        head.add_row("tokens", f"{detail.input_tokens} in / {detail.output_tokens} out")
    if detail.cost:
        head.add_row("cost", money(detail.cost))
    if detail.latency_ms is not None:
        head.add_row("latency", millis(detail.latency_ms))
    if detail.error:
        head.add_row("error", Text(detail.error, style="red"))
    if detail.output is not None:
        output = detail.output if isinstance(detail.output, str) else json.dumps(detail.output, ensure_ascii=False)
        head.add_row("output", output if full else short(output, 200))
    head.add_row("url", detail.url)
    parts: list[Any] = [Panel(head, title="rollout", title_align="left", expand=False)]
    if detail.events:
        parts.append(Text(f"trace ({len(detail.events)} events)", style="bold"))
        parts.append(trace_lines(detail.events, width=10_000 if full else 100))
    else:
        parts.append(Text("trace: no events", style="dim"))
    if detail.scores:
        scores = Table(box=None, header_style="bold", title="scores", title_justify="left")
        for column in ("name", "value", "source", "comment"):
            scores.add_column(column)
        for score in detail.scores:
            scores.add_row(score.name, str(score.value), score.source, score.comment or "")
        parts.append(scores)
    return Group(*parts)
