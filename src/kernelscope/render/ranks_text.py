"""``kernelscope ranks`` in the terminal: what ``store.ranks.analyze_store`` found, nothing computed here."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from ..analysis.ranks import RanksReport
from .format import fmt_ns
from .labels import cut_middle, short_kernel_name


def _table(title: str, *headers: str) -> Table:
    t = Table(title=title, title_justify="left", title_style="bold", box=None, pad_edge=False)
    for i, h in enumerate(headers):
        t.add_column(h, justify="left" if i == 0 else "right", no_wrap=True, overflow="ellipsis")
    return t


def render_ranks(console: Console, report: RanksReport, top: int = 10) -> None:
    width = max(30, console.width - 50)
    seq = "NCCL seq_num" if report.matched_by_seq else "order within each process group/stream"
    console.print(f"{len(report.ranks)} ranks; {report.collectives:,} collectives matched across ranks by {seq}")
    if report.left_out:
        names = ", ".join(str(r) for r in report.left_out)
        console.print(f"partial: rank{'s' if len(report.left_out) > 1 else ''} {names} left out (damaged files)",
                      style="yellow")  # fmt: skip
    for reason in report.skipped:
        console.print(f"skipped: {reason}", style="yellow", overflow="ellipsis")
    s = report.straggler
    if s is not None:
        console.print()
        console.print(
            f"[bold]straggler: rank {s.rank}[/] arrived last at {s.last_arrivals} of {s.collectives} collectives; "
            f"its kernel time is {fmt_ns(s.extra_ns)} above the median rank's"
        )
        t = _table("where its extra time goes (vs the median rank)", "line / module", "rank", "median", "extra")
        for e in s.excess[:top]:
            t.add_row(
                f"{e.by} {cut_middle(e.key or '?', width)}", fmt_ns(e.rank_ns), fmt_ns(e.median_ns), fmt_ns(e.extra_ns)
            )
        console.print(t)
    if report.top_skew:
        console.print()
        t = _table(
            "collectives with the largest skew (last arrival − first arrival)",
            "collective",
            "#",
            "skew",
            "first",
            "last",
        )
        for c in report.top_skew[:top]:
            name = f"{cut_middle(short_kernel_name(c.name), width - 12)} [{c.group}]"
            t.add_row(
                name,
                f"{'seq ' if c.by_seq else ''}{c.seq}",
                fmt_ns(c.skew_ns),
                f"rank {c.first_rank}",
                f"rank {c.last_rank}",
            )
        console.print(t)
    if report.comm:
        console.print()
        t = _table("communication per rank", "rank", "span", "computation", "communication", "exposed", "exposed %")
        for r in sorted(report.comm, key=lambda r: -r.exposed_comm_ns)[:top]:
            pct = f"{100.0 * r.exposed_comm_ns / r.total_ns:.1f}%" if r.total_ns else ""
            t.add_row(
                f"rank {r.rank}",
                fmt_ns(r.total_ns),
                fmt_ns(r.computation_ns),
                fmt_ns(r.total_comm_ns),
                fmt_ns(r.exposed_comm_ns),
                pct,
            )
        console.print(t)
    if report.spread:
        console.print()
        t = _table("rank-to-rank spread of time per line / module", "line / module", "min", "median", "max", "max on")
        for sp in report.spread[:top]:
            t.add_row(
                f"{sp.by} {cut_middle(sp.key or '?', width)}",
                fmt_ns(sp.min_ns),
                fmt_ns(sp.median_ns),
                fmt_ns(sp.max_ns),
                f"rank {sp.max_rank}",
            )
        console.print(t)
