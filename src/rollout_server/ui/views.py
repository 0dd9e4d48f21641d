"""View helpers shared by pages: histograms, group-relative advantages, EMA series, SVG charts, diffs."""

from __future__ import annotations

import difflib
import html
import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup


@dataclass
class Bin:
    low: float
    high: float
    count: int


def histogram(values: Sequence[float], bins: int = 10) -> list[Bin]:
    if not values:
        return []
    low, high = min(values), max(values)
    if low >= 0.0 and high <= 1.0:
        low, high = 0.0, 1.0  # rewards on [0, 1] keep a fixed axis so runs compare by eye
    if high == low:
        high = low + 1.0
    width = (high - low) / bins
    counts = [0] * bins
    for value in values:
        counts[min(bins - 1, int((value - low) / width))] += 1
    return [Bin(low + i * width, low + (i + 1) * width, c) for i, c in enumerate(counts)]


def histogram_svg(bins: list[Bin], width: int = 360, height: int = 120) -> Markup:
    if not bins:
        return Markup('<p class="muted">No rewards yet.</p>')
    peak = max(b.count for b in bins) or 1
    bar = width / len(bins)
    top = 14  # room for the count above the tallest bar
    parts = [f'<svg class="histogram" viewBox="0 0 {width} {height + top + 22}" width="{width}" '
             f'height="{height + top + 22}" role="img" aria-label="Reward histogram">']
    for i, b in enumerate(bins):
        h = (b.count / peak) * height
        x = i * bar
        shade = round((i / max(1, len(bins) - 1)) * 10)
        parts.append(f'<rect class="bar r{shade}" x="{x + 1:.1f}" y="{top + height - h:.1f}" width="{bar - 2:.1f}" '
                     f'height="{h:.1f}"><title>{b.low:.3g} to {b.high:.3g}: {b.count}</title></rect>')
        if b.count:
            parts.append(f'<text x="{x + bar / 2:.1f}" y="{top + height - h - 3:.1f}" class="lbl" '
                         f'text-anchor="middle">{b.count}</text>')
    parts.append(f'<text x="0" y="{top + height + 14}" class="lbl">{bins[0].low:.3g}</text>')
    parts.append(f'<text x="{width}" y="{top + height + 14}" class="lbl" text-anchor="end">'
                 f'{bins[-1].high:.3g}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))


def advantages(rewards: dict[str, float | None], groups: dict[str, str]) -> dict[str, float | None]:
    """Group-relative advantage (GRPO): (reward - group mean) / group std, 0 when the group has no spread."""
    members: dict[str, list[str]] = defaultdict(list)
    for rid, group in groups.items():
        members[group].append(rid)
    out: dict[str, float | None] = {}
    for ids in members.values():
        values = [r for i in ids if (r := rewards.get(i)) is not None]
        mean = statistics.fmean(values) if values else None
        std = statistics.pstdev(values) if len(values) > 1 else 0.0
        for rid in ids:
            reward = rewards.get(rid)
            if reward is None or mean is None:
                out[rid] = None
            else:
                out[rid] = (reward - mean) / std if std > 1e-9 else 0.0
    return out


def ema(values: Sequence[float | None], alpha: float) -> list[float | None]:
    smoothed: list[float | None] = []
    current: float | None = None
    for value in values:
        if value is not None:
            current = value if current is None else alpha * value + (1 - alpha) * current
        smoothed.append(current)
    return smoothed


@dataclass
class Series:
    label: str
    points: list[tuple[float, float | None]]
    smoothed: list[float | None] = field(default_factory=list)
    css: str = "s0"
    link: str | None = None  # URL with {x} replaced by the point's x


def line_chart_svg(title: str, series: list[Series], width: int = 520, height: int = 180) -> Markup:
    """Raw points as dots, EMA as a line; every dot links to its step when the series has a link."""
    xs = [x for s in series for x, _ in s.points]
    ys = [y for s in series for _, y in s.points if y is not None] + [
        y for s in series for y in s.smoothed if y is not None]
    pad_l, pad_b, pad_t = 44, 22, 18
    if not xs or not ys:
        return Markup(f'<figure class="chart"><figcaption>{html.escape(title)}</figcaption>'
                      '<p class="muted">No data.</p></figure>')
    x0, x1 = min(xs), max(xs)
    y0, y1 = min(ys), max(ys)
    if x1 == x0:
        x1 = x0 + 1
    if y1 == y0:
        y1 = y0 + 1
    plot_w, plot_h = width - pad_l - 8, height - pad_b - pad_t

    def px(x: float) -> float:
        return pad_l + (x - x0) / (x1 - x0) * plot_w

    def py(y: float) -> float:
        return pad_t + (1 - (y - y0) / (y1 - y0)) * plot_h

    parts = [f'<figure class="chart"><figcaption>{html.escape(title)}</figcaption>'
             f'<svg viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
             f'aria-label="{html.escape(title)}">',
             f'<line class="axis" x1="{pad_l}" y1="{pad_t + plot_h}" x2="{width - 8}" y2="{pad_t + plot_h}"/>',
             f'<line class="axis" x1="{pad_l}" y1="{pad_t}" x2="{pad_l}" y2="{pad_t + plot_h}"/>',
             f'<text class="lbl" x="{pad_l - 4}" y="{pad_t + 4}" text-anchor="end">{y1:.3g}</text>',
             f'<text class="lbl" x="{pad_l - 4}" y="{pad_t + plot_h}" text-anchor="end">{y0:.3g}</text>',
             f'<text class="lbl" x="{pad_l}" y="{height - 6}">{x0:g}</text>',
             f'<text class="lbl" x="{width - 8}" y="{height - 6}" text-anchor="end">{x1:g}</text>']
    for s in series:
        line = " ".join(f"{px(x):.1f},{py(y):.1f}" for (x, _), y in zip(s.points, s.smoothed, strict=False)
                        if y is not None)
        if line:
            parts.append(f'<polyline class="ema {s.css}" points="{line}"><title>{html.escape(s.label)} (EMA)'
                         '</title></polyline>')
        for x, y in s.points:
            if y is None:
                continue
            dot = (f'<circle class="pt {s.css}" cx="{px(x):.1f}" cy="{py(y):.1f}" r="3">'
                   f'<title>{html.escape(s.label)} · step {x:g}: {y:.4g}</title></circle>')
            if s.link:
                dot = f'<a href="{html.escape(s.link.replace("{x}", f"{x:g}"))}">{dot}</a>'
            parts.append(dot)
    parts.append("</svg>")
    if len(series) > 1:
        parts.append('<figcaption class="legend">' + " ".join(
            f'<span class="key {s.css}">{html.escape(s.label)}</span>' for s in series) + "</figcaption>")
    parts.append("</figure>")
    return Markup("".join(parts))


def diff_html(a: str, b: str) -> Markup:
    """Word-level diff of two texts: removed words in <del>, added in <ins>, everything escaped."""
    left, right = a.split(" "), b.split(" ")
    if len(left) + len(right) > 20_000:
        left, right = left[:10_000], right[:10_000]
    out: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, left, right, autojunk=False).get_opcodes():
        if tag == "equal":
            out.append(html.escape(" ".join(left[i1:i2])))
        if tag in ("delete", "replace"):
            out.append(f"<del>{html.escape(' '.join(left[i1:i2]))}</del>")
        if tag in ("insert", "replace"):
            out.append(f"<ins>{html.escape(' '.join(right[j1:j2]))}</ins>")
    return Markup('<div class="diff">' + " ".join(out) + "</div>")


def as_text(value: Any) -> str:
    import orjson

    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS, default=str).decode()


def finite(values: Iterable[float | None]) -> list[float]:
    return [v for v in values if v is not None and not math.isnan(v)]
