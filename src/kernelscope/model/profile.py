"""The Profile: a calling-context tree with exclusive metric columns, metadata and a timeline.

Nodes are stored columnar: ``parent[i]`` and ``frame[i]`` (an index into
``frames``). Node 0 is the root and every node's parent has a smaller index, so
inclusive values are one reverse pass. Metric columns hold *exclusive* values;
inclusive values are derived, never stored.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from .frames import ALLOWED_CHILDREN, ROOT, Frame
from .timeline import Timeline

FloatArray = npt.NDArray[np.float64]

# Metric order used when presenting standard metrics.
STANDARD_METRICS = ("time_ns", "cpu_time_ns", "count", "flops", "bytes", "alloc_bytes")


class InvariantError(AssertionError):
    """A profile broke one of its structural invariants: a bug, not bad input."""


@dataclass(frozen=True, eq=False)
class Profile:
    frames: tuple[Frame, ...]
    parent: npt.NDArray[np.int32]
    frame: npt.NDArray[np.int32]
    metrics: dict[str, FloatArray]
    metadata: dict[str, Any] = field(default_factory=dict)
    timeline: Timeline | None = None

    # --- structure ------------------------------------------------------
    def __len__(self) -> int:
        return int(self.parent.shape[0])

    def frame_of(self, node: int) -> Frame:
        return self.frames[int(self.frame[node])]

    @cached_property
    def children(self) -> list[list[int]]:
        kids: list[list[int]] = [[] for _ in range(len(self))]
        for node, par in enumerate(self.parent.tolist()):
            if par >= 0:
                kids[par].append(node)
        return kids

    @cached_property
    def depth(self) -> npt.NDArray[np.int32]:
        d = np.zeros(len(self), dtype=np.int32)
        par = self.parent.tolist()
        for node in range(1, len(self)):
            d[node] = d[par[node]] + 1
        return d

    def path(self, node: int) -> list[Frame]:
        """Frames from the root's child down to ``node``."""
        out: list[Frame] = []
        while node > 0:
            out.append(self.frame_of(node))
            node = int(self.parent[node])
        out.reverse()
        return out

    def ancestors(self, node: int) -> Iterator[int]:
        """``node`` and its ancestors, innermost first (root excluded)."""
        while node > 0:
            yield node
            node = int(self.parent[node])

    @property
    def metric_names(self) -> list[str]:
        std = [m for m in STANDARD_METRICS if m in self.metrics]
        return std + sorted(m for m in self.metrics if m not in STANDARD_METRICS)

    # --- metrics ----------------------------------------------------------
    def exclusive(self, metric: str) -> FloatArray:
        col = self.metrics.get(metric)
        return col if col is not None else np.zeros(len(self), dtype=np.float64)

    def inclusive(self, metric: str) -> FloatArray:
        return inclusive_of(self.parent, self.exclusive(metric))

    def total(self, metric: str) -> float:
        return float(self.exclusive(metric).sum())

    # --- checks -----------------------------------------------------------
    def check(self) -> None:
        """Raise InvariantError unless the tree and its columns are well formed."""
        n = len(self)
        if n == 0 or self.parent[0] != -1 or self.frames[self.frame[0]] != ROOT:
            raise InvariantError("node 0 must be the root")
        idx = np.arange(n)
        if (n > 1 and not bool(np.all(self.parent[1:] < idx[1:]))) or bool(np.any(self.parent[1:] < 0)):
            raise InvariantError("every node's parent must precede it")
        if self.frame.shape != self.parent.shape:
            raise InvariantError("frame and parent columns differ in length")
        for name, col in self.metrics.items():
            if col.shape != (n,):
                raise InvariantError(f"metric {name!r} has {col.shape} values for {n} nodes")
            if not bool(np.all(np.isfinite(col))):
                raise InvariantError(f"metric {name!r} has non-finite values")
            inc = self.inclusive(name)
            # inclusive = self + children, at every node
            kids_sum = np.zeros(n)
            np.add.at(kids_sum, self.parent[1:], inc[1:])
            if not np.allclose(inc, col + kids_sum, rtol=1e-9, atol=1e-6):
                raise InvariantError(f"metric {name!r}: inclusive != self + children")
        seen: set[tuple[int, int]] = set()
        for node in range(1, n):
            par = int(self.parent[node])
            key = (par, int(self.frame[node]))
            if key in seen:
                raise InvariantError(f"duplicate child {self.frame_of(node)} under node {par}")
            seen.add(key)
            kind, pkind = self.frame_of(node).kind, self.frame_of(par).kind
            if kind not in ALLOWED_CHILDREN[pkind]:
                raise InvariantError(f"a {kind.value} frame cannot sit under a {pkind.value} frame")
        if self.timeline is not None and len(self.timeline):
            tl = self.timeline
            if int(tl.node.max()) >= n or int(tl.node.min()) < 0:
                raise InvariantError("timeline rows point at missing nodes")
            if int(tl.track.max()) >= len(tl.tracks):
                raise InvariantError("timeline rows point at missing tracks")

    # --- convenience -------------------------------------------------------
    def save(self, path: str) -> None:
        from .io import save

        save(self, path)

    def view(self, by: str = "tree", **options: Any) -> Any:
        """The tree or a grouping: ``analysis.views.view``, which the package's front door plugs in (see ``use_viewer``)."""
        if not _VIEWER:
            raise RuntimeError("Profile.view: no viewer set (kernelscope/__init__.py sets analysis.views.view)")
        return _VIEWER[0](self, by=by, **options)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """In IPython: one line, not every array."""
        argv = self.metadata.get("argv") or self.metadata.get("command") or ""
        what = f" of {' '.join(map(str, argv))}" if isinstance(argv, list) and argv else ""
        printer.text(f"<kernelscope Profile{what}: {len(self)} contexts, metrics {', '.join(self.metrics)}>")

    def _repr_html_(self) -> str:
        """In a notebook: the tree and the interactive report (``notebook.profile_html``, plugged in by the
        package's front door, see ``use_html``), offline."""
        if not _HTML:
            return f"<pre>{html.escape(repr(self))}</pre>"
        return _HTML[0](self)

    def replace(self, **changes: Any) -> Profile:
        from dataclasses import replace

        return replace(self, **changes)


class Viewer(Protocol):
    def __call__(self, profile: Profile, by: str = "tree", **options: object) -> Any: ...


# Reading a profile (trees, groupings) is analysis, a layer above the model: the model never imports it.
# ``kernelscope/__init__.py``, which runs before any ``kernelscope.*`` module, sets it here.
_VIEWER: list[Viewer] = []


_HTML: list[Callable[[Profile], str]] = []


def use_html(render: Callable[[Profile], str]) -> None:
    """Make ``Profile._repr_html_`` render with ``render`` (``notebook.profile_html``, a layer above)."""
    _HTML[:] = [render]


def use_viewer(viewer: Viewer) -> None:
    """Make ``Profile.view`` read with ``viewer`` (``analysis.views.view``)."""
    _VIEWER[:] = [viewer]


def inclusive_of(parent: npt.NDArray[np.int32], exclusive: FloatArray) -> FloatArray:
    inc = np.array(exclusive, dtype=np.float64, copy=True)
    par = parent.tolist()
    vals = inc.tolist()
    for node in range(len(par) - 1, 0, -1):
        vals[par[node]] += vals[node]
    return np.asarray(vals, dtype=np.float64)


class ProfileBuilder:
    """Builds a Profile node by node. Children are found by (parent, frame)."""

    def __init__(self) -> None:
        self._frames: list[Frame] = [ROOT]
        self._frame_index: dict[Frame, int] = {ROOT: 0}
        self._parent: list[int] = [-1]
        self._frame: list[int] = [0]
        self._child: dict[tuple[int, int], int] = {}
        self._metrics: dict[str, dict[int, float]] = {}

    def __len__(self) -> int:
        return len(self._parent)

    def intern(self, frame: Frame) -> int:
        idx = self._frame_index.get(frame)
        if idx is None:
            idx = self._frame_index[frame] = len(self._frames)
            self._frames.append(frame)
        return idx

    def child(self, parent: int, frame: Frame) -> int:
        return self.child_at(parent, self.intern(frame))

    def child_at(self, parent: int, frame_index: int) -> int:
        """``child`` for an already interned frame (hot loops keep frame indices, not frames)."""
        key = (parent, frame_index)
        node = self._child.get(key)
        if node is None:
            node = self._child[key] = len(self._parent)
            self._parent.append(parent)
            self._frame.append(key[1])
        return node

    def path(self, frames: Iterable[Frame], start: int = 0) -> int:
        node = start
        for frame in frames:
            node = self.child(node, frame)
        return node

    def frame_of(self, node: int) -> Frame:
        return self._frames[self._frame[node]]

    def parent_of(self, node: int) -> int:
        return self._parent[node]

    def add(self, node: int, metric: str, value: float) -> None:
        col = self._metrics.get(metric)
        if col is None:
            col = self._metrics[metric] = {}
        col[node] = col.get(node, 0.0) + value

    def add_many(self, node: int, values: dict[str, float]) -> None:
        for metric, value in values.items():
            if value:
                self.add(node, metric, value)

    def metric_values(self, metric: str) -> dict[int, float]:
        """The exclusive values added so far (node -> value); a live view, do not mutate."""
        return self._metrics.get(metric, {})

    def ensure_metric(self, metric: str) -> None:
        self._metrics.setdefault(metric, {})

    def build(self, metadata: dict[str, Any] | None = None, timeline: Timeline | None = None) -> Profile:
        n = len(self._parent)
        metrics: dict[str, FloatArray] = {}
        for name, values in self._metrics.items():
            col = np.zeros(n, dtype=np.float64)
            if values:
                keys = np.fromiter(values.keys(), dtype=np.int64, count=len(values))
                col[keys] = np.fromiter(values.values(), dtype=np.float64, count=len(values))
            metrics[name] = col
        return Profile(
            frames=tuple(self._frames),
            parent=np.asarray(self._parent, dtype=np.int32),
            frame=np.asarray(self._frame, dtype=np.int32),
            metrics=metrics,
            metadata=dict(metadata or {}),
            timeline=timeline,
        )


def prune_empty(profile: Profile) -> Profile:
    """Drop subtrees whose every metric is zero (lines that ran no ops, empty scopes).

    Timeline rows of a dropped node move to its nearest kept ancestor. The input is not mutated.
    """
    n = len(profile)
    keep = np.zeros(n, dtype=bool)
    keep[0] = True
    for col in profile.metrics.values():
        keep |= inclusive_of(profile.parent, np.abs(col)) > 0
    if bool(keep.all()):
        return profile
    par = profile.parent.tolist()
    new_index = np.full(n, -1, dtype=np.int64)
    nearest = np.zeros(n, dtype=np.int64)  # nearest kept ancestor-or-self, in new indices
    kept: list[int] = []
    for node in range(n):
        if keep[node]:
            new_index[node] = len(kept)
            kept.append(node)
            nearest[node] = new_index[node]
        else:
            nearest[node] = nearest[par[node]]
    kept_arr = np.asarray(kept, dtype=np.int64)
    parent = np.asarray([-1] + [int(new_index[par[k]]) for k in kept[1:]], dtype=np.int32)
    tl = profile.timeline
    if tl is not None:
        tl = Timeline(tracks=tl.tracks, **{**tl.columns(), "node": nearest[tl.node].astype(np.int32)})
    return Profile(
        frames=profile.frames,
        parent=parent,
        frame=profile.frame[kept_arr],
        metrics={k: v[kept_arr] for k, v in profile.metrics.items()},
        metadata=profile.metadata,
        timeline=tl,
    )
