"""A diff of two profiles as a table: base, new, Δ and Δ% per row, largest |Δ| first."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..analysis.diff import DiffResult, DiffRow, Gate
from ..analysis.per_step import NOT_RECORDED
from .format import fmt_si

NULL_LABEL = {
    "line": "(unattributed: no user line)",
    "function": "(no user function)",
    "module": "(outside any module)",
    "op": "(no op)",
    "kernel": "(no kernel)",
    "layer": "(not sampled: op time no native sample saw, device time)",
    "line-layer": "(unattributed: no user line)",
    "tree": "(root)",
}


def _num(value: float, unit: str = "ms") -> str:
    if unit != "ms":
        return fmt_si(value)
    return f"{value:,.3f}" if abs(value) < 1000 else f"{value:,.1f}"


def _pct(row: DiffRow) -> str:
    if row.not_recorded:
        return f"{row.not_recorded}: {NOT_RECORDED}"
    p = row.delta_pct
    if p is None:
        return "new" if row.new else ""
    return f"{p:+.1f}%"


def render_diff(console: Console, result: DiffResult, limit: int | None = None, gate: Gate | None = None) -> None:
    unit, scale = result.unit
    suffix = f" {unit}" if unit else ""
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for name in (f"base{suffix}", f"new{suffix}", f"Δ{suffix}", "Δ%"):
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column(result.by, overflow="fold")
    rows = result.rows if limit is None else result.rows[:limit]
    tripped = {id(r) for r in gate.rows} if gate else set()
    for r in rows:
        label = NULL_LABEL[result.by] if r.key is None else r.key
        if r.base_key:
            label += f" (was {r.base_key})"
        style = "red" if id(r) in tripped else None
        values = [_num(v / scale, unit) for v in (r.base, r.new, r.delta)]
        if r.not_recorded:
            values[0 if r.not_recorded == "base" else 1], values[2] = "—", ""
        table.add_row(*values, _pct(r), escape(label), style=style)
    if limit is not None and len(result.rows) > limit:
        table.add_row("", "", "", "", f"… {len(result.rows) - limit} more rows (use --limit)")
    t = result.total
    table.add_row(*(_num(v / scale, unit) for v in (t.base, t.new, t.delta)), _pct(t), "total", style="bold")
    per_step = f", {escape(result.per_step)}" if result.per_step else ""
    console.print(f"[bold]{escape(result.metric)}[/bold] by {escape(result.by)}: base → new{per_step}")
    console.print(table)
    if gate is not None:
        if gate.tripped:
            what = "the total" if gate.total_tripped else ""
            rows_text = f"{len(gate.rows)} row(s)" if gate.rows else ""
            joined = " and ".join(x for x in (what, rows_text) if x)
            console.print(
                f"[red]FAIL[/red]: {joined} regressed by more than {gate.pct:g}% (noise floor {gate.noise_floor_pct:g}% of the base total)"
            )
        else:
            console.print(f"OK: nothing regressed by more than {gate.pct:g}% above the noise floor")
