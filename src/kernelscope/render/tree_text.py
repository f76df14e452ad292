"""The calling-context tree in the terminal: one line per node, guides for depth.

Iterative, so a 5,000-deep stack renders like a 5-deep one.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape

from ..analysis.metrics import MetricSpec
from ..analysis.views import TreeView
from ..model import FrameKind
from .format import fmt_value

_STYLE = {
    FrameKind.PYTHON: "cyan",
    FrameKind.MODULE: "magenta",
    FrameKind.OP: "",
    FrameKind.KERNEL: "green",
    FrameKind.BACKWARD: "yellow",
    FrameKind.SCOPE: "bold",
    FrameKind.REGION: "blue",
    FrameKind.PART: "dim",
}

MAX_LABEL = 160


def render_tree(console: Console, tv: TreeView, specs: Sequence[MetricSpec]) -> None:
    p = tv.profile
    totals = {name: float(col[0]) for name, col in tv.inclusive.items()}
    header = "  ".join(f"{s.name:>10}" for s in specs)
    console.print(f"[bold]{escape(header)}[/bold]  [bold]context[/bold]")
    for node, depth in zip(tv.order, tv.depth, strict=True):
        frame = p.frame_of(node)
        if node == 0:
            label = "total"
            style = "bold"
        else:
            label = frame.label()
            if len(label) > MAX_LABEL:
                label = label[: MAX_LABEL - 1] + "…"
            style = _STYLE.get(frame.kind, "")
        values = {name: float(col[node]) for name, col in tv.inclusive.items()}
        cells = "  ".join(f"{fmt_value(s, s(values, totals)):>10}" for s in specs)
        indent = "│ " * max(depth - 1, 0) + ("├ " if depth else "")
        if depth > 40:
            indent = f"│ …{depth - 40} more… " + "│ " * 39 + "├ "
        text = escape(label)
        more = tv.hidden.get(node)
        suffix = f" [dim](+{more} hidden)[/dim]" if more else ""
        body = f"[{style}]{text}[/{style}]" if style else text
        console.print(f"{cells}  [dim]{indent}[/dim]{body}{suffix}", overflow="ellipsis", no_wrap=True)
