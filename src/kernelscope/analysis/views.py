"""Views of a profile: the filtered tree and the flat groupings by line, module, op and kernel.

Pure functions of a Profile; renderers print what these return.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import UsageError
from ..model import Frame, FrameKind, Profile

GROUPINGS = ("line", "module", "op", "kernel")
VIEWS = ("tree", *GROUPINGS)


# --- grouping keys -------------------------------------------------------------
def _line_key(f: Frame) -> str | None:
    if f.kind is FrameKind.PYTHON or (f.kind is FrameKind.PART and f.file):
        return f"{f.file}:{f.line}"
    return None


def _module_key(f: Frame) -> str | None:
    if f.kind is FrameKind.MODULE:
        return f.name
    if f.kind is FrameKind.PART and f.module:
        return f.module
    return None


def _op_key(f: Frame) -> str | None:
    return f.name if f.kind in (FrameKind.OP, FrameKind.PART) else None


def _kernel_key(f: Frame) -> str | None:
    return f.name if f.kind is FrameKind.KERNEL else None


KEY_OF: dict[str, Callable[[Frame], str | None]] = {
    "line": _line_key,
    "module": _module_key,
    "op": _op_key,
    "kernel": _kernel_key,
}


def _cpu_kernel_key(f: Frame) -> str | None:
    return f.name if f.kind in (FrameKind.KERNEL, FrameKind.OP) else None


def node_keys(profile: Profile, by: str) -> list[str | None]:
    """The innermost ``by`` context of every node (None where there is none).

    On a CPU-only live run the ops are the kernels (``time_ns`` is their self time), so ``kernel``
    groups by the innermost kernel or op there.
    """
    own = KEY_OF[by]
    if by == "kernel" and profile.metadata.get("device_run") is False:
        own = _cpu_kernel_key
    frame_keys = [own(f) for f in profile.frames]
    keys: list[str | None] = [None] * len(profile)
    par = profile.parent.tolist()
    fr = profile.frame.tolist()
    for node in range(1, len(profile)):
        k = frame_keys[fr[node]]
        keys[node] = k if k is not None else keys[par[node]]
    return keys


@dataclass(frozen=True)
class Grouped:
    by: str
    metrics: tuple[str, ...]  # stored columns, summed
    rows: tuple[tuple[str | None, dict[str, float]], ...]  # sorted by the first metric, descending
    total: dict[str, float]


def group(profile: Profile, by: str, metrics: Sequence[str] | None = None) -> Grouped:
    if by not in KEY_OF:
        raise UsageError(f"unknown grouping {by!r}; choose one of: {', '.join(VIEWS)}")
    cols = list(metrics) if metrics is not None else profile.metric_names
    keys = node_keys(profile, by)
    uniq: dict[str | None, int] = {}
    idx = np.fromiter((uniq.setdefault(k, len(uniq)) for k in keys), dtype=np.int64, count=len(keys))
    sums = {}
    for c in cols:
        s = np.zeros(len(uniq))
        np.add.at(s, idx, profile.exclusive(c))
        sums[c] = s
    rows = []
    for key, i in uniq.items():
        vals = {c: float(sums[c][i]) for c in cols}
        if any(vals.values()):  # a key with nothing measured is noise (and the bare root)
            rows.append((key, vals))
    rows.sort(key=lambda r: (-(r[1].get(cols[0], 0.0) if cols else 0.0), r[0] is None, r[0] or ""))
    total = {c: profile.total(c) for c in cols}
    return Grouped(by, tuple(cols), tuple(rows), total)


# --- tree -----------------------------------------------------------------------
@dataclass(frozen=True)
class TreeOptions:
    depth: int | None = None
    include: str | None = None  # regex over frame labels: keep matching nodes, their ancestors and subtrees
    exclude: str | None = None  # regex over frame labels: drop matching nodes with their subtrees
    threshold_pct: float = 0.0  # hide nodes below this share of the sort metric's total
    sort_metric: str = "time_ns"


@dataclass(frozen=True)
class TreeView:
    """Visible nodes in pre-order with their depth; ``hidden[n]`` counts children hidden under n."""

    profile: Profile
    order: tuple[int, ...]
    depth: tuple[int, ...]
    inclusive: dict[str, np.ndarray] = field(repr=False)
    hidden: dict[int, int] = field(default_factory=dict)


def _compile(pattern: str | None, what: str) -> re.Pattern[str] | None:
    if not pattern:
        return None
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise UsageError(f"bad {what} regex {pattern!r}: {exc}") from None


def tree_view(profile: Profile, options: TreeOptions | None = None, metrics: Sequence[str] | None = None) -> TreeView:
    opt = options or TreeOptions()
    inc_re = _compile(opt.include, "--include")
    exc_re = _compile(opt.exclude, "--exclude")
    cols = list(metrics) if metrics is not None else profile.metric_names
    if opt.sort_metric not in cols and opt.sort_metric in profile.metrics:
        cols.append(opt.sort_metric)
    inclusive = {c: profile.inclusive(c) for c in cols}
    sort_col = inclusive.get(opt.sort_metric)
    if sort_col is None:
        sort_col = inclusive[cols[0]] if cols else np.zeros(len(profile))
    total = float(sort_col[0]) if len(profile) else 0.0
    labels = [f.label() for f in profile.frames]
    fr = profile.frame.tolist()
    n = len(profile)

    # include: a node is kept when it, an ancestor or a descendant matches
    keep_inc = np.ones(n, dtype=bool)
    if inc_re is not None:
        hit = np.array([bool(inc_re.search(labels[fr[i]])) for i in range(n)])
        par = profile.parent.tolist()
        below = hit.copy()  # node or a descendant matches
        for i in range(n - 1, 0, -1):
            if below[i]:
                below[par[i]] = True
        above = hit.copy()  # node or an ancestor matches
        for i in range(1, n):
            if above[par[i]]:
                above[i] = True
        keep_inc = below | above
    excluded = [bool(exc_re.search(labels[fr[i]])) for i in range(n)] if exc_re is not None else [False] * n

    order: list[int] = []
    depth: list[int] = []
    hidden: dict[int, int] = {}
    kids = profile.children
    stack: list[tuple[int, int]] = [(0, 0)]
    threshold = total * opt.threshold_pct / 100.0
    while stack:
        node, d = stack.pop()
        order.append(node)
        depth.append(d)
        if opt.depth is not None and d >= opt.depth:
            if kids[node]:
                hidden[node] = len(kids[node])
            continue
        visible = []
        for c in kids[node]:
            if excluded[c] or not keep_inc[c] or (threshold > 0 and abs(sort_col[c]) < threshold):
                hidden[node] = hidden.get(node, 0) + 1
                continue
            visible.append(c)
        visible.sort(key=lambda c: (-abs(sort_col[c]), labels[fr[c]]))
        stack.extend((c, d + 1) for c in reversed(visible))
    return TreeView(profile, tuple(order), tuple(depth), inclusive, hidden)


def view(profile: Profile, by: str = "tree", **options: object) -> TreeView | Grouped:
    if by == "tree":
        return tree_view(profile, TreeOptions(**options))  # type: ignore[arg-type]
    return group(profile, by, options.get("metrics"))  # type: ignore[arg-type]
