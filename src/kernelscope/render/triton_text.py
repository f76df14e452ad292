"""``kernelscope triton``'s terminal summary: launches, per kernel line memory traffic, problems."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..collect.triton.report import InspectReport


def _table(*columns: str, right: int = 0) -> Table:
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for i, name in enumerate(columns):
        table.add_column(name, justify="right" if i < right else "left", no_wrap=i < right, overflow="fold")
    return table


def _bytes(n: int) -> str:
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def render_triton(console: Console, report: InspectReport) -> None:
    if not report.launches:
        console.print(Text("no Triton kernel ran on the interpreter"))
        return
    launches = _table("programs", "grid", "kernel", "launched at", right=2)
    for la in report.launches:
        where = f"{la.file}:{la.line}" if la.file else "(no user line)"
        if la.callers:  # the same launch line reached from different places
            where += "".join(f" ← {f}:{n}" if f != la.file else f" ← :{n}" for f, n in la.callers)
        launches.add_row(str(la.programs), "×".join(map(str, la.grid)), Text(la.kernel), Text(where))
    console.print(Text("Launches", style="bold"))
    console.print(launches)
    lines = _table("bytes", "elements", "masked", "count", "op", "kernel line", right=4)
    for s in report.lines:
        op = s.op
        if s.dot_shapes:
            op += " " + ", ".join(f"{m}×{k} @ {k}×{n}" for m, n, k in s.dot_shapes)
        lines.add_row(
            _bytes(s.bytes) if s.op != "dot" else "",
            str(s.elements) if s.op != "dot" else "",
            f"{s.masked_fraction:.1%}" if s.op != "dot" else "",
            str(s.count),
            Text(op),
            Text(f"{s.file}:{s.line} {s.kernel}"),
        )
    console.print()
    console.print(Text("Memory per kernel line", style="bold"))
    console.print(lines)
    console.print()
    if not report.problems:
        console.print(Text("No problems found.", style="green"))
        return
    console.print(Text(f"Problems ({len(report.problems)})", style="bold red"))
    for p in report.problems:
        head = Text(f"{p.kind}", style="bold red")
        head.append(
            Text(f"  {p.file}:{p.line} {p.kernel} program ({p.program_id[0]},{p.program_id[1]},{p.program_id[2]})")
        )
        if p.arg:
            head.append(Text(f" arg {p.arg}"))
        console.print(head)
        console.print(Text(f"    {p.detail}"))
