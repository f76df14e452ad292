"""Views of a profile: the tree (``tree.py``) and the flat groupings by line, function, module, op
and kernel.

Pure functions of a Profile; renderers print what these return.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import UsageError
from ..model import Frame, FrameKind, Profile
from .transforms import group_instances, instance_class, merge_ranks, merge_steps
from .tree import Hidden, TreeOptions, TreeView, filtered, tree_view

GROUPINGS = ("line", "function", "module", "op", "kernel", "layer", "line-layer")
VIEWS = ("tree", *GROUPINGS)


# --- grouping keys -------------------------------------------------------------
def _line_key(f: Frame) -> str | None:
    if f.kind is FrameKind.PYTHON or (f.kind is FrameKind.PART and f.file):
        return f"{f.file}:{f.line}"
    return None


def _function_key(f: Frame) -> str | None:
    if f.kind is FrameKind.PYTHON:
        return f"{f.file}:{f.name}"
    return None


def _module_key(f: Frame) -> str | None:
    if f.kind is FrameKind.MODULE:
        return instance_class(f) or f.name
    if f.kind is FrameKind.PART and f.module:
        return f.module
    return None


def _op_key(f: Frame) -> str | None:
    return f.name if f.kind in (FrameKind.OP, FrameKind.PART) else None


def _kernel_key(f: Frame) -> str | None:
    return f.name if f.kind is FrameKind.KERNEL else None


def _layer_key(f: Frame) -> str | None:
    """A sampled native frame's layer (collect/native/layers.py: one rule over symbols and libraries); the
    host time no native sample saw has none (the ``null`` row)."""
    return (f.cls or "other") if f.kind is FrameKind.NATIVE else None


KEY_OF: dict[str, Callable[[Frame], str | None]] = {
    "line": _line_key,
    "function": _function_key,
    "module": _module_key,
    "op": _op_key,
    "kernel": _kernel_key,
    "layer": _layer_key,
    "line-layer": _layer_key,  # (keyed "LINE · LAYER": node_keys combines the two)
}


def _cpu_kernel_key(f: Frame) -> str | None:
    return f.name if f.kind in (FrameKind.KERNEL, FrameKind.OP) else None


def _own_keys(profile: Profile, by: str) -> list[str | None]:
    """Per frame: its own ``by`` key (None when the frame is not of that kind)."""
    own = KEY_OF[by]
    if by == "kernel" and profile.metadata.get("device_run") is False:
        own = _cpu_kernel_key
    return [own(f) for f in profile.frames]


def node_keys(profile: Profile, by: str) -> list[str | None]:
    """The innermost ``by`` context of every node (None where there is none).

    On a CPU-only live run the ops are the kernels (``time_ns`` is their self time), so ``kernel``
    groups by the innermost kernel or op there.
    """
    if by == "line-layer":
        lines, layers = node_keys(profile, "line"), node_keys(profile, "layer")
        return [f"{ln} · {ly}" if ly is not None else ln for ln, ly in zip(lines, layers, strict=True)]
    frame_keys = _own_keys(profile, by)
    keys: list[str | None] = [None] * len(profile)
    par = profile.parent.tolist()
    fr = profile.frame.tolist()
    for node in range(1, len(profile)):
        k = frame_keys[fr[node]]
        keys[node] = k if k is not None else keys[par[node]]
    return keys


def own_nodes(profile: Profile, by: str) -> np.ndarray:
    """Per node: is its own frame of the ``by`` kind? Only these nodes' ``count`` is a row's calls
    (a kernel's launches, an op's calls), never the counts of what runs under them."""
    own_frame = np.asarray([k is not None for k in _own_keys(profile, by)], dtype=bool)
    out: np.ndarray = own_frame[profile.frame] if len(profile) else np.zeros(0, dtype=bool)
    return out


@dataclass(frozen=True)
class Grouped:
    """Flat totals by key. Every column sums the exclusive values of the nodes whose innermost ``by``
    context is the key, except ``count``: the calls of the key's own frames (DESIGN.md), so ``count``
    by kernel is launches, by op calls of that op, by module forward calls."""

    by: str
    metrics: tuple[str, ...]  # stored columns, summed
    rows: tuple[tuple[str | None, dict[str, float]], ...]  # sorted by the sort metric, descending
    total: dict[str, float]
    left_out: int = 0  # rows a threshold left out (their values are still in ``total``)

    def __repr__(self) -> str:
        head = f"Grouped(by={self.by!r}, {len(self.rows)} rows, metrics={list(self.metrics)})"
        top = "".join(f"\n  {k}: {v}" for k, v in self.rows[:5])
        return head + top + ("\n  …" if len(self.rows) > 5 else "")


def group(profile: Profile, by: str, metrics: Sequence[str] | None = None, sort_metric: str | None = None) -> Grouped:
    if by not in KEY_OF:
        raise UsageError(f"unknown grouping {by!r}; choose one of: {', '.join(VIEWS)}")
    cols = list(metrics) if metrics is not None else profile.metric_names
    keys = node_keys(profile, by)
    own = own_nodes(profile, by)
    uniq: dict[str | None, int] = {}
    idx = np.fromiter((uniq.setdefault(k, len(uniq)) for k in keys), dtype=np.int64, count=len(keys))
    sums = {}
    for c in cols:
        s = np.zeros(len(uniq))
        col = profile.exclusive(c)
        if c == "count":
            col = np.where(own, col, 0.0)
        np.add.at(s, idx, col)
        sums[c] = s
    rows = []
    for key, i in uniq.items():
        vals = {c: float(sums[c][i]) for c in cols}
        if any(vals.values()):  # a key with nothing measured is noise (and the bare root)
            rows.append((key, vals))
    sort = sort_metric if sort_metric in cols else (cols[0] if cols else None)
    rows.sort(key=lambda r: (-(r[1].get(sort, 0.0) if sort else 0.0), r[0] is None, r[0] or ""))
    total = {c: profile.total(c) for c in cols}
    if "count" in total:
        total["count"] = float(sums["count"].sum())
    return Grouped(by, tuple(cols), tuple(rows), total)


def simplify(profile: Profile, per_step: bool = False, instances: bool = True, per_rank: bool = False) -> Profile:
    """What every view starts from: steps merged (unless ``per_step``), a job's ranks summed (unless
    ``per_rank``) and, for the tree, module instances grouped by class (flat views key instances by class
    themselves)."""
    if not per_step:
        profile = merge_steps(profile)
    if not per_rank:
        profile = merge_ranks(profile)
    return group_instances(profile) if instances else profile


def view(profile: Profile, by: str = "tree", **options: object) -> TreeView | Grouped:
    """``Profile.view``: the tree (options as ``TreeOptions``) or a grouping (``metrics=[...]``)."""
    if by == "tree":
        return tree_view(profile, TreeOptions(**options))  # type: ignore[arg-type]
    return group(profile, by, options.get("metrics"))  # type: ignore[arg-type]


__all__ = [
    "GROUPINGS",
    "KEY_OF",
    "VIEWS",
    "Grouped",
    "Hidden",
    "TreeOptions",
    "TreeView",
    "filtered",
    "group",
    "node_keys",
    "own_nodes",
    "simplify",
    "tree_view",
    "view",
]
