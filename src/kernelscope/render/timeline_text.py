"""``kernelscope timeline`` in the terminal: breakdown per device, top idle gaps, sync points.

Prints what ``analysis.timeline.analyze`` returned; computes nothing. Names from traces go
through ``Text`` so brackets in kernel names are never read as markup.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..analysis.breakdown import DeviceBreakdown
from ..analysis.timeline import TimelineReport

MAX_NAME = 90


def _short(name: str | None, width: int = MAX_NAME) -> Text:
    if name is None:
        return Text("—", style="dim")
    return Text(name if len(name) <= width else name[: width - 1] + "…")


def _ms(ns: float) -> str:
    return f"{ns / 1e6:,.3f}"


def _us(ns: float) -> str:
    return f"{ns / 1e3:,.1f}"


def _pct(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:5.1f}%" if whole else "    –"


def _table(title: str) -> Table:
    return Table(title=title, title_justify="left", title_style="bold", box=None, pad_edge=False, header_style="bold")


def render_breakdown(console: Console, devices: tuple[DeviceBreakdown, ...]) -> None:
    for d in devices:
        t = _table(f"GPU timeline: {d.device}")
        t.add_column("", no_wrap=True)
        t.add_column("ms", justify="right", no_wrap=True)
        t.add_column("%", justify="right", no_wrap=True)
        rows = (
            ("total", d.total_ns),
            ("busy", d.busy_ns),
            ("  computation", d.computation_ns),
            ("  exposed communication", d.exposed_comm_ns),
            ("  exposed memcpy", d.exposed_memcpy_ns),
            ("idle", d.idle_ns),
            ("communication (all)", d.total_comm_ns),
            ("memcpy (all)", d.total_memcpy_ns),
        )
        for label, ns in rows:
            t.add_row(label, _ms(ns), _pct(ns, d.total_ns))
        console.print(t)
        if d.unlinked_events:
            console.print(
                Text(
                    f"  not counted: {d.unlinked_events:,} events ({_ms(d.unlinked_ns)} ms) launched before the trace began",
                    style="dim",
                )
            )
        console.print()


def render_across(console: Console, merged: dict[str, Any] | None) -> None:
    if merged is None:
        return
    t = _table(f"Across {merged['devices']} devices (ranks)")
    for name in ("", "min ms", "mean ms", "max ms"):
        t.add_column(name, justify="left" if not name else "right", no_wrap=True)
    for part, label in (
        ("total", "total"),
        ("busy", "busy"),
        ("computation", "  computation"),
        ("exposed_comm", "  exposed communication"),
        ("exposed_memcpy", "  exposed memcpy"),
        ("idle", "idle"),
    ):
        v = merged[f"{part}_time_ms"]
        t.add_row(label, f"{v['min']:,.3f}", f"{v['mean']:,.3f}", f"{v['max']:,.3f}")
    console.print(t)
    console.print(Text(f"  most idle: {merged['most_idle_device']}", style="dim"))
    console.print()


def render_gaps(console: Console, report: TimelineReport) -> None:
    gaps = report.idle_gaps
    if not gaps.streams:
        return
    t = _table(f"Idle gaps per stream (kernel wait: < {gaps.kernel_wait_ns / 1e3:g} µs)")
    t.add_column("stream", no_wrap=True)
    t.add_column("gaps", justify="right")
    t.add_column("idle ms", justify="right")
    t.add_column("host wait ms", justify="right")
    t.add_column("kernel wait ms", justify="right")
    t.add_column("other ms", justify="right")
    for s in gaps.streams:
        by = dict(s.classes)
        t.add_row(
            Text(f"{s.device} {s.stream}"),
            f"{s.gaps:,}",
            _ms(s.idle_ns),
            *(f"{_ms(c.time_ns)} ({c.count:,})" for c in by.values()),
        )
    console.print(t)
    console.print()
    if gaps.top:
        t = _table("Longest idle gaps")
        t.add_column("µs", justify="right", no_wrap=True)
        t.add_column("class", no_wrap=True)
        t.add_column("next kernel", overflow="fold")
        t.add_column("op", overflow="fold")
        t.add_column("line", overflow="fold")
        for g in gaps.top:
            t.add_row(_us(g.dur_ns), g.gap_class.value, _short(g.kernel, 60), _short(g.op, 40), _short(g.line))
        console.print(t)
        console.print()


def render_launch(console: Console, report: TimelineReport) -> None:
    if not report.launch.devices:
        return
    t = _table("Kernel launches")
    t.add_column("device", no_wrap=True)
    t.add_column("kernels", justify="right")
    t.add_column("delay median µs", justify="right")
    t.add_column("p90 µs", justify="right")
    t.add_column("max µs", justify="right")
    t.add_column("shorter than launch", justify="right")
    for d in report.launch.devices:
        t.add_row(
            Text(d.device),
            f"{d.launched:,}/{d.kernels:,}",
            _us(d.delay_median_ns),
            _us(d.delay_p90_ns),
            _us(d.delay_max_ns),
            f"{d.shorter_than_launch:,} ({_ms(d.shorter_than_launch_ns)} ms)",
        )
    console.print(t)
    console.print()


def render_syncs(console: Console, report: TimelineReport, limit: int = 10) -> None:
    s = report.syncs
    if not s.count and not s.untimed:
        return
    t = _table(
        f"Host-device syncs: {s.count:,} points, host blocked {_ms(s.host_ns)} ms, GPU idle after {_ms(s.idle_after_ns)} ms"
    )
    t.add_column("count", justify="right")
    t.add_column("host ms", justify="right")
    t.add_column("GPU idle after ms", justify="right")
    t.add_column("line", overflow="fold")
    t.add_column("what", overflow="fold")
    for row in s.by_line[:limit]:
        what = ", ".join(f"{name} ×{n}" for name, n in row.names)
        t.add_row(
            f"{row.count:,}",
            _ms(row.host_ns),
            _ms(row.idle_after_ns),
            _short(row.line) if row.line else Text("(no user line)", style="dim"),
            _short(what, 60),
        )
    if len(s.by_line) > limit:
        t.add_row("", "", "", Text(f"… {len(s.by_line) - limit} more lines", style="dim"), "")
    console.print(t)
    console.print()


def render_timeline(console: Console, report: TimelineReport) -> None:
    if not report.breakdown.devices:
        console.print(Text("no device events in this timeline"))
        return
    render_breakdown(console, report.breakdown.devices)
    render_across(console, report.breakdown.across_devices())
    render_gaps(console, report)
    render_launch(console, report)
    render_syncs(console, report)
