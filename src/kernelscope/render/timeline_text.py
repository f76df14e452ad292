"""``kernelscope timeline`` in the terminal: breakdown per device, top idle gaps, launches, syncs.

Prints what ``analysis.timeline.analyze`` returned; computes nothing. Every table fits the width
(``grid``): names are shortened, never wrapped; times are in the unit that suits each table.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rich.console import Console
from rich.text import Text

from ..analysis.breakdown import DeviceBreakdown
from ..analysis.timeline import TimelineReport
from .format import fmt_ns, time_unit
from .grid import Column, print_grid
from .labels import cut_middle, located, short_kernel_name

_SCALE = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1.0}


def _unit(values_ns: Iterable[float]) -> str:
    """One unit for a column: the one that suits its largest value (µs at the finest)."""
    unit = time_unit(max((abs(v) for v in values_ns), default=0.0))
    return "us" if unit == "ns" else unit


def _show_unit(unit: str) -> str:
    return unit.replace("us", "µs")


def _t(ns: float, unit: str) -> str:
    v = ns / _SCALE[unit]
    return f"{v:,.3f}" if unit in ("s", "ms") else f"{v:,.1f}"


def _pct(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:5.1f}%" if whole else ""


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def _line(text: str, width: int) -> str:
    file, _, line = text.rpartition(":")
    return located(file, int(line), "", width) if line.isdigit() else cut_middle(text, width)


def _kernel(text: str, width: int) -> str:
    return cut_middle(short_kernel_name(text), width)


def render_breakdown(console: Console, devices: tuple[DeviceBreakdown, ...], names: Mapping[str, str]) -> None:
    for d in devices:
        unit = _unit([d.total_ns])
        parts = (
            ("total (first to last event)", d.total_ns),
            ("busy", d.busy_ns),
            ("  computation", d.computation_ns),
            ("  exposed communication", d.exposed_comm_ns),
            ("  exposed memcpy", d.exposed_memcpy_ns),
            ("idle", d.idle_ns),
            ("communication (all)", d.total_comm_ns),
            ("memcpy (all)", d.total_memcpy_ns),
        )
        rows = [[label, _t(ns, unit), _pct(ns, d.total_ns)] for label, ns in parts]
        note = ""
        if d.unlinked_events:
            note = (
                f"not counted: {_plural(d.unlinked_events, 'event')} ({fmt_ns(d.unlinked_ns)}) whose launch is not in "
                "the trace (queued before profiling began)"
            )
        cols = [Column("", left=True), Column(_show_unit(unit)), Column("%")]
        print_grid(console, f"GPU timeline: {names.get(d.device, d.device)}", cols, rows, note)


def render_across(console: Console, merged: dict[str, Any] | None) -> None:
    if merged is None:
        return
    rows = []
    for part, label in (
        ("total", "total"),
        ("busy", "busy"),
        ("computation", "  computation"),
        ("exposed_comm", "  exposed communication"),
        ("exposed_memcpy", "  exposed memcpy"),
        ("idle", "idle"),
    ):
        v = merged[f"{part}_time_ms"]
        rows.append([label, f"{v['min']:,.3f}", f"{v['mean']:,.3f}", f"{v['max']:,.3f}"])
    cols = [Column("", left=True), Column("min ms"), Column("mean ms"), Column("max ms")]
    note = f"most idle: {merged['most_idle_device']}"
    print_grid(console, f"Across {merged['devices']} devices (ranks)", cols, rows, note)


def render_gaps(console: Console, report: TimelineReport, names: Mapping[str, str], unlinked: int) -> None:
    gaps = report.idle_gaps
    if not gaps.streams:
        return
    unit = _unit(s.idle_ns for s in gaps.streams)
    u = _show_unit(unit)
    cols = [
        Column("stream", left=True, shrink=cut_middle),
        Column("gaps"),
        Column("idle"),
        Column("host wait (n)"),
        Column("kernel wait (n)"),
        Column("other (n)"),
    ]
    devices = list(dict.fromkeys(s.device for s in gaps.streams))
    for i, device in enumerate(devices):  # one table per device: stream names stay short
        rows = []
        for st in gaps.streams:
            if st.device == device:
                by = dict(st.classes)
                rows.append(
                    [
                        st.stream,
                        f"{st.gaps:,}",
                        _t(st.idle_ns, unit),
                        *(f"{_t(c.time_ns, unit)} ({c.count:,})" for c in by.values()),
                    ]
                )
        note = ""
        if i == len(devices) - 1:
            note = (
                f"kernel wait: a gap under {gaps.kernel_wait_ns / 1e3:g} µs with the next kernel already queued; "
                "host wait: its launch came after the gap began; other: the rest."
            )
            if unlinked:
                note += (
                    " Gaps lie between all events on a stream, including those launched before the trace, so a "
                    "stream's idle time can exceed its device's span above."
                )
        print_grid(console, f"Idle gaps per stream on {_device(device, names)} ({u})", cols, rows, note)
    if gaps.top:
        unit = _unit(g.dur_ns for g in gaps.top)
        rows = [[_t(g.dur_ns, unit), g.gap_class.value, g.kernel or "—", g.op or "—", g.line or "—"] for g in gaps.top]
        cols = [
            Column(_show_unit(unit)),
            Column("class", left=True),
            Column("next kernel", left=True, shrink=_kernel, floor=30),
            Column("op", left=True, shrink=cut_middle, floor=14),
            Column("line", left=True, shrink=_line, floor=20),
        ]
        print_grid(console, "Longest idle gaps", cols, rows)


def _device(device: str, names: Mapping[str, str]) -> str:
    return names.get(device, device).split(" (", 1)[0]


def render_launch(console: Console, report: TimelineReport, names: Mapping[str, str]) -> None:
    if not report.launch.devices:
        return
    unit = _unit(d.delay_max_ns for d in report.launch.devices)
    u = _show_unit(unit)
    rows = [
        [
            _device(d.device, names),
            f"{d.launched:,}/{d.kernels:,}",
            _t(d.delay_median_ns, unit),
            _t(d.delay_p90_ns, unit),
            _t(d.delay_max_ns, unit),
            f"{d.shorter_than_launch:,} ({fmt_ns(d.shorter_than_launch_ns)})",
        ]
        for d in report.launch.devices
    ]
    cols = [
        Column("device", left=True, shrink=cut_middle),
        Column("launched/kernels"),
        Column("median"),
        Column("p90"),
        Column("max"),
        Column("shorter than launch"),
    ]
    note = (
        "delay: from the launch call's start to the kernel's start; shorter than launch: kernels that ran for "
        "less time than their launch call took (count, their time)"
    )
    print_grid(console, f"Kernel launches, delay in {u}", cols, rows, note)


def render_syncs(console: Console, report: TimelineReport, limit: int = 10) -> None:
    s = report.syncs
    if not s.count and not s.untimed:
        return
    unit = _unit([s.host_ns, s.idle_after_ns])
    u = _show_unit(unit)
    rows = []
    for row in s.by_line[:limit]:
        what = ", ".join(f"{name} ×{n}" for name, n in row.names)
        rows.append(
            [f"{row.count:,}", _t(row.host_ns, unit), _t(row.idle_after_ns, unit), row.line or "(no user line)", what]
        )
    if len(s.by_line) > limit:
        rows.append(["", "", "", f"… {len(s.by_line) - limit} more lines", ""])
    cols = [
        Column("count"),
        Column(f"host {u}"),
        Column(f"GPU idle after {u}"),
        Column("line", left=True, shrink=_line, floor=24),
        Column("what", left=True, floor=20),
    ]
    title = (
        f"Host-device syncs: {_plural(s.count, 'point')}, host blocked {fmt_ns(s.host_ns)}, "
        f"GPU idle after them {fmt_ns(s.idle_after_ns)}"
    )
    print_grid(console, title, cols, rows)


def render_timeline(console: Console, report: TimelineReport, names: Mapping[str, str] | None = None) -> None:
    """``names``: a display name per device (``cuda:2`` → ``GPU 2 (AMD Instinct MI300X)``)."""
    names = names or {}
    if not report.breakdown.devices:
        console.print(Text("no device events in this timeline"))
        return
    unlinked = sum(d.unlinked_events for d in report.breakdown.devices)
    render_breakdown(console, report.breakdown.devices, names)
    render_across(console, report.breakdown.across_devices())
    render_gaps(console, report, names, unlinked)
    render_launch(console, report, names)
    render_syncs(console, report)
