"""The calling-context tree in the terminal: one line per node, guides for depth.

Iterative, so a 5,000-deep stack renders like a 5-deep one; lines are built as rich ``Text``
(no markup parsing), so names with brackets print as they are.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.text import Text

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
MAX_GUIDES = 40  # deeper levels are summarised as "…N more…"


def _guides(depth: int, last: list[bool]) -> str:
    """Tree guides for a node at ``depth``; ``last[d]`` says whether the ancestor at depth d+1 was a last child."""
    if depth == 0:
        return ""
    parts = ["  " if last[d] else "│ " for d in range(1, depth)]
    if len(parts) > MAX_GUIDES:
        parts = [f"…{len(parts) - MAX_GUIDES} more… ", *parts[-MAX_GUIDES:]]
    return "".join(parts) + ("└ " if last[depth] else "├ ")


def render_tree(console: Console, tv: TreeView, specs: Sequence[MetricSpec]) -> None:
    p = tv.profile
    totals = {name: float(col[0]) for name, col in tv.inclusive.items()}
    cols = {name: col.tolist() for name, col in tv.inclusive.items()}
    header = Text("  ".join(f"{s.name:>10}" for s in specs) + "  context", style="bold")
    console.print(header, no_wrap=True, overflow="ellipsis")
    order, depths = tv.order, tv.depth
    n = len(order)
    # is each visible node the last visible child of its parent? A later sibling clears the flag.
    is_last = [True] * n
    open_at: list[int] = []  # open_at[d]: index of the latest node at depth d under the current path
    for i in range(n):
        d = depths[i]
        if d < len(open_at):
            is_last[open_at[d]] = False
            del open_at[d:]
        open_at.append(i)
    last: list[bool] = [True]
    lines: list[Text] = []
    for i, node in enumerate(order):
        d = depths[i]
        del last[d:]
        last.append(is_last[i])
        frame = p.frame_of(node)
        if node == 0:
            label, style = "total", "bold"
        else:
            label = frame.label()
            if len(label) > MAX_LABEL:
                label = label[: MAX_LABEL - 1] + "…"
            style = _STYLE.get(frame.kind, "")
        values = {name: col[node] for name, col in cols.items()}
        line = Text("  ".join(f"{fmt_value(s, s(values, totals)):>10}" for s in specs) + "  ")
        line.append(_guides(d, last), style="dim")
        line.append(label, style=style)
        more = tv.hidden.get(node)
        if more:
            line.append(f" (+{more} hidden)", style="dim")
        lines.append(line)
    # one print for the whole tree: printing line by line costs ~0.2 ms a line
    console.print(Text("\n").join(lines), no_wrap=True, overflow="ellipsis")
