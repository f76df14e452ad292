"""The tree view: which nodes to show, in what order, and what each shown line stands for.

Pure: a Profile and options in, a TreeView out. The steps, in order:

1. ``--exclude`` removes matching contexts with their time, ``--include`` keeps only the time inside
   matching contexts (``transforms``); inclusive values are taken after that, so parents' totals
   are exactly what is shown below them.
2. Children below ``threshold_pct`` of the total, or matching ``--hide`` (rows only; their time stays
   in their parents), are left out; each line says how many it left out and how much time they hold.
3. Chains of single-child Python frames, ops and regions collapse into the line where the path branches,
   naming what they hide (pyinstrument's ``[12 frames hidden]``). The innermost Python frame of a chain
   stays (it is the user line of what it calls), and a chain stops where what it left out on the
   way down would reach the threshold, so that time stays visible. A compiled region named after the user's
   code ends a chain; sibling chains that would end on the same frame are not collapsed (what tells them
   apart is shown). ``collapse_modules`` collapses modules, scopes
   and those Python frames too, for trees that would not fit the screen otherwise.
4. ``depth`` counts shown levels, after collapsing.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import UsageError
from ..model import FrameKind, Profile
from . import transforms

# a chain may hide Python frames, ops and regions; modules (the model's structure), scopes (names
# someone chose to see: steps, record_function, kernelscope.scope) and the backward marker stay;
# kernels end chains anyway
_COLLAPSIBLE = frozenset({FrameKind.PYTHON, FrameKind.OP, FrameKind.REGION})


@dataclass(frozen=True)
class TreeOptions:
    depth: int | None = None  # shown levels below the root
    include: str | None = None  # regex over frame labels: keep only the time inside matching contexts
    exclude: str | None = None  # regex over frame labels: remove matching contexts and their time
    hide: str | None = None  # regex over frame labels: leave matching rows out, keep their time
    threshold_pct: float = 0.0  # leave out nodes below this share of the sort metric's total
    sort_metric: str = "time_ns"
    collapse: bool = False  # collapse single-child chains of Python frames, ops and regions
    collapse_modules: bool = False  # with collapse: modules, scopes and a chain's innermost Python frame too


@dataclass(frozen=True)
class Hidden:
    """What a shown node leaves out below it: ``count`` children holding ``value`` of the sort metric."""

    count: int
    value: float


@dataclass(frozen=True)
class TreeView:
    """Shown nodes in pre-order with their shown depth.

    ``hidden[n]``: children of n left out (threshold, ``--hide``, depth). ``collapsed[n]``: the
    nodes between n's shown parent and n that were collapsed away, outermost first.
    ``inclusive`` is taken on ``profile``, the profile after include/exclude.
    """

    profile: Profile
    order: tuple[int, ...]
    depth: tuple[int, ...]
    inclusive: dict[str, np.ndarray] = field(repr=False)
    hidden: dict[int, Hidden] = field(default_factory=dict)
    collapsed: dict[int, tuple[int, ...]] = field(default_factory=dict)
    sort_metric: str = "time_ns"

    def __repr__(self) -> str:
        """A few lines a REPL can show (``kernelscope view`` prints the real thing)."""
        col = self.inclusive.get(self.sort_metric)
        head = f"TreeView({len(self.order)} of {len(self.profile)} nodes shown, sorted by {self.sort_metric})"
        rows = []
        for node, d in list(zip(self.order, self.depth, strict=True))[:12]:
            value = f"{float(col[node]):>14,.0f}  " if col is not None else ""
            rows.append(f"\n  {value}{'  ' * d}{self.profile.frame_of(node).label()}")
        return head + "".join(rows) + ("\n  …" if len(self.order) > 12 else "")


def compile_regex(pattern: str | None, what: str) -> re.Pattern[str] | None:
    if not pattern:
        return None
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise UsageError(f"bad {what} regex {pattern!r}: {exc}") from None


def filtered(profile: Profile, include: str | None, exclude: str | None) -> Profile:
    """``profile`` after ``--exclude`` then ``--include``."""
    exc_re = compile_regex(exclude, "--exclude")
    inc_re = compile_regex(include, "--include")
    if exc_re is not None:
        profile = transforms.exclude(profile, exc_re)
    if inc_re is not None:
        profile = transforms.include(profile, inc_re)
    return profile


def tree_view(profile: Profile, options: TreeOptions | None = None, metrics: Sequence[str] | None = None) -> TreeView:
    opt = options or TreeOptions()
    hide_re = compile_regex(opt.hide, "--hide")
    p = filtered(profile, opt.include, opt.exclude)
    cols = list(metrics) if metrics is not None else p.metric_names
    if opt.sort_metric not in cols and opt.sort_metric in p.metrics:
        cols.append(opt.sort_metric)
    inclusive = {c: p.inclusive(c) for c in cols}
    sort_col = inclusive.get(opt.sort_metric)
    if sort_col is None:
        sort_col = inclusive[cols[0]] if cols else np.zeros(len(p))
    sort_metric = opt.sort_metric if opt.sort_metric in inclusive else (cols[0] if cols else "")
    sort_abs = np.abs(sort_col).tolist()
    total = sort_abs[0] if len(p) else 0.0
    threshold = total * opt.threshold_pct / 100.0
    labels = [f.label() for f in p.frames]
    kinds = [f.kind for f in p.frames]
    fr = p.frame.tolist()
    hidden_frame = [bool(hide_re.search(lab)) for lab in labels] if hide_re is not None else [False] * len(labels)
    kids = p.children
    hidden: dict[int, Hidden] = {}
    memo: dict[int, list[int]] = {}

    def shown_children(node: int) -> list[int]:
        got = memo.get(node)
        if got is not None:
            return got
        out, n_out, v_out = [], 0, 0.0
        for c in kids[node]:
            if hidden_frame[fr[c]] or (threshold > 0 and sort_abs[c] < threshold):
                n_out += 1
                v_out += float(sort_col[c])
            else:
                out.append(c)
        if n_out:
            hidden[node] = Hidden(n_out, v_out)
        out.sort(key=lambda c: (-sort_abs[c], labels[fr[c]]))
        memo[node] = out
        return out

    collapsible = _COLLAPSIBLE | {FrameKind.MODULE, FrameKind.SCOPE} if opt.collapse_modules else _COLLAPSIBLE
    rank_scope = [f.kind is FrameKind.SCOPE and transforms.is_rank(f.name) for f in p.frames]
    named_region = [f.kind is FrameKind.REGION and bool(f.cls) for f in p.frames]

    def chain_end(node: int) -> tuple[int, tuple[int, ...]]:
        """Follow single-child collapsible nodes down; return the node to show and those skipped."""
        skipped: list[int] = []
        start = sort_abs[node]
        while opt.collapse and kinds[fr[node]] in collapsible:
            if rank_scope[fr[node]] or named_region[fr[node]]:
                break  # a job's rank (view --per-rank), a compiled region named after the user's code: always named
            below = shown_children(node)
            # what the chain leaves out on its way down must stay under the threshold in all
            if len(below) != 1 or start - sort_abs[below[0]] > max(threshold, 1e-9 * total):
                break
            if (
                not opt.collapse_modules
                and kinds[fr[node]] is FrameKind.PYTHON
                and kinds[fr[below[0]]] is not FrameKind.PYTHON
            ):
                break  # the innermost Python frame of a chain is the user line of what it calls: keep it
            skipped.append(node)
            node = below[0]
        return node, tuple(skipped)

    order: list[int] = []
    depth: list[int] = []
    collapsed: dict[int, tuple[int, ...]] = {}
    stack: list[tuple[int, int]] = [(0, 0)]
    while stack:
        node, d = stack.pop()
        order.append(node)
        depth.append(d)
        below = shown_children(node)
        if opt.depth is not None and d >= opt.depth:
            if below:
                prev = hidden.get(node, Hidden(0, 0.0))
                extra = sum(float(sort_col[c]) for c in below)
                hidden[node] = Hidden(prev.count + len(below), prev.value + extra)
            continue
        shown = []
        ends = [chain_end(c) for c in below]
        same = Counter(fr[end] for end, _ in ends)
        for c, (end, skipped) in zip(below, ends, strict=True):
            if skipped and same[fr[end]] > 1:
                # rows that would read the same (two lines calling one function): show where they differ
                end, skipped = c, ()
            if skipped:
                collapsed[end] = skipped
            shown.append(end)
        shown.sort(key=lambda c: (-sort_abs[c], labels[fr[c]]))  # by what each line shows
        stack.extend((c, d + 1) for c in reversed(shown))
    return TreeView(p, tuple(order), tuple(depth), inclusive, hidden, collapsed, sort_metric)
