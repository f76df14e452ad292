"""Flat views (by line/function/module/op/kernel) as a table whose cells never wrap."""

from __future__ import annotations

import math
from collections.abc import Sequence

from rich.console import Console
from rich.text import Text

from ..analysis.metrics import MetricSpec
from ..analysis.views import Grouped
from .format import fmt_value, header_name
from .labels import MIN_WIDTH, cut_end, key_label, prose

NULL_LABEL = {
    "line": "(unattributed: no user line)",
    "function": "(unattributed: no user function)",
    "module": "(outside any module)",
    "op": "(no op)",
    "kernel": "(no kernel)",
    "layer": "(not sampled: op time no native sample saw, device time)",
    "line-layer": "(unattributed: no user line)",
}


def _labels(g: Grouped, keys: Sequence[str | None], room: int, full_names: bool) -> list[str]:
    """Row labels in ``room``; shortened names that came out equal get `` [2]``, `` [3]``…
    (``--full-names`` tells them apart)."""
    seen: dict[str, int] = {}
    out = []
    for key in keys:
        if key is None:
            out.append(NULL_LABEL[g.by])
            continue
        label = key_label(g.by, key, room, full_names)
        n = seen[label] = seen.get(label, 0) + 1
        if n > 1:
            mark = f" [{n}]"
            label = key_label(g.by, key, max(room - len(mark), MIN_WIDTH), full_names) + mark
        out.append(label)
    return out


def _rows(n: int, more: str = "") -> str:
    return f"{n:,} {more}row" if n == 1 else f"{n:,} {more}rows"


def _no_calls(values: dict[str, float], key: str | None = None) -> dict[str, float]:
    if "count" in values and (key is None or not values["count"]):
        return {**values, "count": math.nan}
    return values


def render_grouped(
    console: Console,
    g: Grouped,
    specs: Sequence[MetricSpec],
    limit: int | None = None,
    full_names: bool = False,
    totals: dict[str, float] | None = None,
) -> None:
    """Print ``g``: one row per key, then ``… N more rows`` and the total. ``totals`` (default
    ``g.total``) are what ``%`` and per-wall-second metrics divide by."""
    totals = dict(totals) if totals is not None else dict(g.total)
    rows = g.rows if limit is None else g.rows[:limit]
    # calls of "no such context" mean nothing: blank
    cells = [[fmt_value(s, s(_no_calls(values, key), totals)) for s in specs] for key, values in rows]
    total_cells = [fmt_value(s, s(_no_calls(g.total, "total"), totals)) for s in specs]
    heads = [header_name(s, "self") for s in specs]
    widths = [
        max([len(h), len(t), *(len(r[i]) for r in cells)])
        for i, (h, t) in enumerate(zip(heads, total_cells, strict=True))
    ]
    prefix = sum(w + 2 for w in widths)
    room = max(console.width - prefix, MIN_WIDTH)

    def line(values: Sequence[str], label: str) -> str:
        return "  ".join(f"{v:>{w}}" for v, w in zip(values, widths, strict=True)) + "  " + label

    out = [Text(cut_end(line(heads, g.by), console.width), style="bold")]
    labels = _labels(g, [key for key, _ in rows], room, full_names)
    for label, row in zip(labels, cells, strict=True):
        out.append(Text(line(row, label)))
    more = []
    if limit is not None and len(g.rows) > limit:
        more.append(f"{_rows(len(g.rows) - limit, 'more ')} (--limit 0 shows them)")
    if g.left_out:
        more.append(f"{_rows(g.left_out)} under the threshold (--threshold 0 shows them)")
    out.append(Text(line(total_cells, "total"), style="bold"))
    console.print(
        Text("\n").join(out), no_wrap=True, overflow="ignore" if full_names else "ellipsis", crop=not full_names
    )
    if more:  # prose under the table: wrapped, never cut
        console.print(
            Text(prose("… " + "; ".join(more) + "; all are in the total", console.width), style="dim"), no_wrap=True
        )
