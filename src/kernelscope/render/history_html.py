"""``history report``: a self-contained HTML page, one small inline SVG plot per selected key (no scripts, offline)."""

from __future__ import annotations

import html
from collections.abc import Sequence

from ..history.query import Run
from ..history.trend import Trend
from .history_text import fmt, label, moved, trend_change, when

WIDTH, HEIGHT, PAD = 360, 90, 6

STYLE = """
body { font: 14px system-ui, sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.3em; } .key { margin: 1.2em 0; } .name { font-family: monospace; word-break: break-all; }
svg { background: #fafafa; border: 1px solid #ddd; } polyline { fill: none; stroke: #2563eb; stroke-width: 1.5; }
circle { fill: #2563eb; } .meta { color: #666; font-size: 0.9em; }
"""


def _plot(values: Sequence[float], runs: Sequence[Run], metric: str) -> str:
    lo, hi = min(values, default=0.0), max(values, default=0.0)
    span = hi - lo or 1.0
    step = (WIDTH - 2 * PAD) / max(len(values) - 1, 1)
    pts = [(PAD + i * step, HEIGHT - PAD - (v - lo) / span * (HEIGHT - 2 * PAD)) for i, v in enumerate(values)]
    line = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
    dots = "".join(
        f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5"><title>{html.escape(_tip(r, v, metric))}</title></circle>'
        for (x, y), r, v in zip(pts, runs, values, strict=True)
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img"><polyline points="{line}"/>{dots}</svg>'
    )


def _tip(run: Run, value: float, metric: str) -> str:
    labels = " ".join(f"{k}={v}" for k, v in run.labels)
    return f"run {run.id} {when(run.started)} {(run.git_commit or '')[:12]} {labels}: {fmt(value, metric)}".strip()


def render_trend_page(title: str, by: str, metric: str, runs: Sequence[Run], rows: Sequence[Trend]) -> str:
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="meta">by {html.escape(by)}, {html.escape(label(metric))}, {len(runs)} runs '
        f"(oldest first); change: median of the newer half of the runs vs the older half</p>",
    ]
    for t in rows:
        name = moved(t.key, t.was)
        parts.append(
            '<div class="key">'
            f'<div class="name">{html.escape(name)}</div>'
            f'<div class="meta">{fmt(t.before, metric)} → {fmt(t.after, metric)} ({html.escape(trend_change(t))})</div>'
            f"{_plot(t.series, runs, metric)}</div>"
        )
    parts.append("</body></html>\n")
    return "\n".join(parts)


__all__ = ["render_trend_page"]
