"""Terminal output of ``kernelscope history``: runs, a key's series with a sparkline, trends and the gate."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..analysis.per_step import NOT_RECORDED
from ..history.gate import GateResult
from ..history.query import Run
from ..history.trend import Trend

BARS = "▁▂▃▄▅▆▇█"
NULL_KEY = "(outside any)"


def sparkline(values: Sequence[float]) -> str:
    if not values:
        return ""
    lo, hi = min(values), max(values)
    if hi <= lo:
        return BARS[0] * len(values)
    return "".join(BARS[min(len(BARS) - 1, int((v - lo) / (hi - lo) * len(BARS)))] for v in values)


def scale(metric: str) -> tuple[float, str]:
    """Divisor and unit a metric is shown in."""
    return (1e6, "ms") if metric.endswith("_ns") else (1.0, "")


def label(metric: str) -> str:
    unit = scale(metric)[1]
    return f"{metric} ({unit})" if unit else metric


def fmt(value: float, metric: str) -> str:
    div, unit = scale(metric)
    return f"{value / div:,.3f}{' ' + unit if unit else ''}"


def fmt_pct(p: float | None) -> str:
    if p is None:
        return "-"
    if not math.isfinite(p):
        return "new" if p > 0 else "-inf"
    return f"{p:+.1f}%"


def when(started: float) -> str:
    return dt.datetime.fromtimestamp(started, tz=dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def _labels(run: Run) -> str:
    return " ".join(f"{k}={v}" for k, v in run.labels)


def render_runs(console: Console, runs: Sequence[Run]) -> None:
    t = Table(title=f"{len(runs)} runs", title_justify="left")
    for col in ("id", "started (UTC)", "commit", "branch", "host", "labels", "command"):
        t.add_column(col, overflow="fold")
    for r in runs:
        t.add_row(
            str(r.id),
            when(r.started),
            (r.git_commit or "-")[:12],
            r.branch or "-",
            r.host or "-",
            Text(_labels(r)),
            Text(" ".join(r.command)),
        )
    console.print(t)


def moved(key: str | None, was: Sequence[str]) -> str:
    """A key's name, with the names it had before in these runs: ``prog.py:36 (moved from prog.py:33)``."""
    name = key if key is not None else NULL_KEY
    return f"{name} (moved from {', '.join(was)})" if was else name


def render_series(
    console: Console,
    key: str,
    metric: str,
    runs: Sequence[Run],
    values: Sequence[float],
    was: Sequence[str] = (),
    names: Sequence[str | None] = (),
) -> None:
    """``names``: the key in each run; shown as a column when it moved (``was``)."""
    console.print(Text(f"{moved(key, was)}  {label(metric)}  {sparkline(values)}"))
    t = Table()
    cols = ["run", "started (UTC)", "commit", "branch", "labels", *(["key"] if was else []), label(metric)]
    for col in cols:
        t.add_column(col, overflow="fold", justify="right" if col == label(metric) else "left")
    for j, (r, v) in enumerate(zip(runs, values, strict=True)):
        where = [Text(names[j] or "-")] if was else []
        t.add_row(
            str(r.id),
            when(r.started),
            (r.git_commit or "-")[:12],
            r.branch or "-",
            Text(_labels(r)),
            *where,
            fmt(v, metric),
        )
    console.print(t)


def render_trends(console: Console, by: str, metric: str, n_runs: int, rows: Sequence[Trend]) -> None:
    t = Table(title=f"by {by}: newer half vs older half of the last {n_runs} runs ({metric})", title_justify="left")
    for col in (by, "before", "after", "change", "runs"):
        t.add_column(col, overflow="fold", justify="left" if col in (by, "runs") else "right")
    for tr in rows:
        t.add_row(
            Text(moved(tr.key, tr.was)),
            "—" if tr.not_recorded == "before" else fmt(tr.before, metric),
            "—" if tr.not_recorded == "after" else fmt(tr.after, metric),
            trend_change(tr),
            sparkline(tr.series),
        )
    console.print(t)


def trend_change(tr: Trend) -> str:
    return f"{tr.not_recorded}: {NOT_RECORDED}" if tr.not_recorded else fmt_pct(tr.change_pct)


def render_gate(console: Console, g: GateResult, limit: int) -> None:
    console.print(
        Text(f"base: {g.base.ref} ({g.base.how}, {len(g.base.runs)} runs: {', '.join(map(str, g.base.ids))})")
    )
    console.print(Text(f"new:  {g.new.ref} ({g.new.how}, {len(g.new.runs)} runs: {', '.join(map(str, g.new.ids))})"))
    console.print(Text(f"test: {g.method}"))
    console.print(Text(f"keys whose growth is below {g.noise_floor_pct:g}% of the base total never fail"))
    quiet = [c for c in g.changes if not c.flagged and (c.base or c.new)]
    shown = [c for c in g.changes if c.flagged] + quiet[: max(0, limit)]
    t = Table(title=f"by {g.by} ({g.metric}, medians)", title_justify="left")
    for col in ("", g.by, "base", "new", "change", "95% interval", "p"):
        t.add_column(col, overflow="fold", justify="left" if col in ("", g.by) else "right")
    for c in shown:
        interval = "-" if c.low_pct is None else f"[{fmt_pct(c.low_pct)}, {fmt_pct(c.high_pct)}]"
        t.add_row(
            "REGRESSION" if c.flagged else "",
            Text(moved(c.key, [c.base_key] if c.base_key else [])),
            "—" if c.not_recorded == "base" else fmt(c.base, g.metric),
            "—" if c.not_recorded == "new" else fmt(c.new, g.metric),
            f"{c.not_recorded}: {NOT_RECORDED}" if c.not_recorded else fmt_pct(c.change_pct),
            interval,
            "-" if c.p_value is None else f"{c.p_value:.3f}",
        )
    console.print(t)
    flagged = g.flagged
    if flagged:
        names = ", ".join(c.key if c.key is not None else NULL_KEY for c in flagged)
        console.print(Text(f"{len(flagged)} regression(s) above {g.fail_above_pct:g}%: {names}"))
    else:
        console.print(Text(f"no regression above {g.fail_above_pct:g}%"))


__all__ = [
    "NULL_KEY",
    "moved",
    "render_gate",
    "render_runs",
    "render_series",
    "render_trends",
    "sparkline",
    "trend_change",
]
