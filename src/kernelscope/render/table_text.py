"""Flat views (by line/module/op/kernel) as a table."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table

from ..analysis.metrics import MetricSpec
from ..analysis.views import Grouped
from .format import fmt_value

NULL_LABEL = {
    "line": "(unattributed: no user line)",
    "module": "(outside any module)",
    "op": "(no op)",
    "kernel": "(no kernel)",
}


def render_grouped(console: Console, g: Grouped, specs: Sequence[MetricSpec], limit: int | None = None) -> None:
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for s in specs:
        table.add_column(s.name, justify="right", no_wrap=True)
    table.add_column(g.by, overflow="fold")
    rows = g.rows if limit is None else g.rows[:limit]
    for key, values in rows:
        label = NULL_LABEL[g.by] if key is None else key
        table.add_row(*(fmt_value(s, s(values, g.total)) for s in specs), label)
    if limit is not None and len(g.rows) > limit:
        table.add_row(*("" for _ in specs), f"… {len(g.rows) - limit} more rows (use --limit)")
    table.add_row(*(fmt_value(s, s(g.total, g.total)) for s in specs), "total", style="bold")
    console.print(table)
