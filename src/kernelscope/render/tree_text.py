"""The calling-context tree in the terminal: one line per shown node, guides for depth.

Every line fits the console width: labels are shortened (``labels``) to what is left after the
metric columns and the guides, and deep guides are summarised as ``…N``. Iterative, so a
5,000-deep stack renders like a 5-deep one; lines are built as rich ``Text`` (no markup parsing),
so names with brackets print as they are.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from rich.console import Console
from rich.text import Text

from ..analysis.metrics import MetricSpec
from ..analysis.views import TreeView
from ..model import Frame, FrameKind
from .format import fmt_ns, fmt_si, fmt_value, header_name
from .labels import MIN_WIDTH, cut_end, frame_label

_STYLE = {
    FrameKind.PYTHON: "cyan",
    FrameKind.MODULE: "magenta",
    FrameKind.OP: "",
    FrameKind.KERNEL: "green",
    FrameKind.BACKWARD: "yellow",
    FrameKind.SCOPE: "bold",
    FrameKind.REGION: "blue",
    FrameKind.PART: "dim",
    FrameKind.NATIVE: "dim",
}

COL_WIDTH = 8  # what a metric column is expected to take, before its values are known
LABEL_FIRST = 28  # a label keeps this much room before notes may have it
LEVELS_LABEL = 22  # the room a label keeps at the deepest level shown by default


def _guides(depth: int, last: list[bool], max_levels: int) -> str:
    """Tree guides for a node at ``depth``; ``last[d]``: was the ancestor at depth d+1 a last child.

    Deeper than ``max_levels``, the outer levels are replaced by one ``… ``, so a label keeps its room.
    """
    if depth == 0:
        return ""
    parts = ["  " if last[d] else "│ " for d in range(1, depth)]
    if len(parts) > max_levels:
        parts = ["… ", *parts[len(parts) - max_levels + 1 :]]
    return "".join(parts) + ("└ " if last[depth] else "├ ")


def _origin(f: Frame) -> str:
    """What a collapsed frame was, in a word: its top package, op namespace or kind."""
    if f.kind is FrameKind.PYTHON:
        parts = f.file.split("/")
        # a relative path names its package first; an absolute one is known by its file
        head = parts[0] if len(parts) > 1 and parts[0] and parts[0] != "." else parts[-1]
        return head.removesuffix(".py") or f.name
    if f.kind is FrameKind.OP:
        return f.name.split("::", 1)[0] if "::" in f.name else "ops"
    if f.kind is FrameKind.MODULE:
        return f.cls or f.name
    if f.kind in (FrameKind.SCOPE, FrameKind.REGION):
        return f.label()
    return str(f.kind.value)


def collapsed_notes(frames: Sequence[Frame]) -> tuple[str, ...]:
    """What a collapsed chain hid, longest first: ``[8 hidden in Owlv2Model: moca, transformers]``,
    ``[8 hidden in Owlv2Model]``, ``[8 hidden]``. The innermost hidden module is the one named."""
    origins = list(dict.fromkeys(_origin(f) for f in frames if f.kind is not FrameKind.MODULE))
    names = ", ".join(origins[:3]) + (", …" if len(origins) > 3 else "")
    modules = [f for f in frames if f.kind is FrameKind.MODULE]
    inside = f" in {frame_label(modules[-1], 40)}" if modules else ""
    n = len(frames)
    out = [f" [{n} hidden{inside}: {names}]" if names else f" [{n} hidden{inside}]"]
    if inside:
        out.append(f" [{n} hidden{inside}]")
    out.append(f" [{n} hidden]")
    return tuple(out)


def _fit_label(frame: Frame, notes: list[tuple[str, ...]], room: int, full_names: bool) -> tuple[str, str]:
    """The label and the notes that fit ``room``: the whole label first, then the longest combination of
    the notes' forms that still fits; a label that cannot be whole keeps ``LABEL_FIRST`` characters."""
    label = frame_label(frame, room, full_names)
    combos = sorted(("".join(c) for c in itertools.product(*notes)), key=len, reverse=True)
    if full_names:
        return label, combos[0]
    for note in combos:
        if len(label) + len(note) <= room:
            return label, note
    compact = combos[-1]
    label = frame_label(frame, max(room - len(compact), min(len(label), LABEL_FIRST)), full_names)
    return label, compact if len(compact) <= room - len(label) else ""


def _widths(specs: Sequence[MetricSpec], scope: str) -> list[int]:
    return [max(COL_WIDTH, len(header_name(s, scope))) for s in specs]


def levels_that_fit(width: int, specs: Sequence[MetricSpec]) -> int:
    """How many tree levels fit ``width`` with the columns of ``specs`` and ``LABEL_FIRST`` for labels."""
    room = width - sum(w + 2 for w in _widths(specs, "incl"))
    return max(2, (room - LEVELS_LABEL) // 2)


def render_tree(
    console: Console,
    tv: TreeView,
    specs: Sequence[MetricSpec],
    totals: dict[str, float] | None = None,
    full_names: bool = False,
) -> None:
    """Print ``tv``. ``totals`` (default: the root's inclusive values) are what ``%`` divides by.
    A line that leaves rows out says how many and what they hold: ``(+3 more: 210 µs)``."""
    p = tv.profile
    own = {"count": p.exclusive("count").tolist()}  # calls are the frame's own, never summed
    totals = dict(totals) if totals is not None else {name: float(col[0]) for name, col in tv.inclusive.items()}
    cols = {name: col.tolist() for name, col in tv.inclusive.items()}
    cell_text = []
    for node in tv.order:
        values = {name: col[node] for name, col in cols.items()}
        # a frame that ran has calls: 0 means none were recorded for this kind of frame (blank)
        values.update({name: col[node] or float("nan") for name, col in own.items() if name in values})
        cell_text.append([fmt_value(s, s(values, totals)) for s in specs])
    heads = [header_name(s, "incl") for s in specs]
    widths = [max([len(h), *(len(c[i]) for c in cell_text)]) for i, h in enumerate(heads)]
    width = console.width
    prefix = sum(w + 2 for w in widths)
    room = max(width - prefix, MIN_WIDTH + 4)
    max_levels = max(2, room // 4)  # guides take at most half the room
    head = "  ".join(f"{h:>{w}}" for h, w in zip(heads, widths, strict=True)) + "  context"
    order, depths = tv.order, tv.depth
    n = len(order)
    is_last = [True] * n
    open_at: list[int] = []  # open_at[d]: index of the latest node at depth d under the current path
    for i in range(n):
        d = depths[i]
        if d < len(open_at):
            is_last[open_at[d]] = False
            del open_at[d:]
        open_at.append(i)
    # sibling rows that would read the same (parts of one fused kernel on one line, from two modules) say
    # what tells them apart: the module
    shown_parent: list[int] = []
    at_depth: dict[int, int] = {}
    for i, node in enumerate(order):
        at_depth[depths[i]] = node
        shown_parent.append(at_depth.get(depths[i] - 1, -1))
    same = Counter((shown_parent[i], p.frame_of(node).label()) for i, node in enumerate(order))
    last: list[bool] = [True]
    lines: list[Text] = [Text(cut_end(head, width), style="bold")]
    for i, node in enumerate(order):
        d = depths[i]
        del last[d:]
        last.append(is_last[i])
        frame = p.frame_of(node)
        if frame.kind is FrameKind.PART and frame.module and same[(shown_parent[i], frame.label())] > 1:
            frame = replace(frame, name=f"{frame.name} in {frame.module}")
        cells = "  ".join(f"{c:>{w}}" for c, w in zip(cell_text[i], widths, strict=True))
        guides = _guides(d, last, max_levels)
        more = tv.hidden.get(node)
        # notes in their full and compact forms: "[3 hidden: moca, torch]" / "[3 hidden]",
        # "(+4 more: 0.42 ms)" / "(+4)"
        notes: list[tuple[str, ...]] = []
        if where := frame.location():  # a compiled region's torch.compile line: where it is, not its name
            base = where.rsplit("/", 1)[-1]
            notes.append((f" @ {where}", f" @ {base}", "") if base != where else (f" @ {where}", ""))
        if node in tv.collapsed:
            hid = [p.frame_of(k) for k in tv.collapsed[node]]
            notes.append(collapsed_notes(hid))
        if more and more.value:  # rows holding none of the sort metric are left out silently
            if tv.sort_metric.endswith("time_ns"):
                amount = fmt_ns(more.value)
            else:
                amount = f"{fmt_si(more.value)} {tv.sort_metric}"
            notes.append((f" (+{more.count} more: {amount})", f" (+{more.count})"))
        label_room = max(width - prefix - len(guides), MIN_WIDTH)
        if node == 0:
            label, style, note = "total", "bold", ""
        else:
            label, note = _fit_label(frame, notes, label_room, full_names)
            style = _STYLE.get(frame.kind, "")
        line = Text(cells + "  ")
        line.append(guides, style="dim")
        line.append(label, style=style)
        if note:
            line.append(note, style="dim")
        lines.append(line)
    # one print for the whole tree: a print per line costs far more (benchmarks/README.md, "Costs the code's
    # comments rely on")
    console.print(
        Text("\n").join(lines), no_wrap=True, overflow="ignore" if full_names else "ellipsis", crop=not full_names
    )
