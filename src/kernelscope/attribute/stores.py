"""The engine's working stores: spilled runs of timeline rows, launches, op ids and joined device
events, the tree under construction, and the timeline built from the rows."""

from __future__ import annotations

import mmap
import os
from typing import Any

import numpy as np
import numpy.typing as npt

from ..model import Frame, FrameKind, ProfileBuilder, Timeline, Track
from ..model.timeline import COLUMNS as TIMELINE_DTYPES
from .spill import I64, RunStore, TempArea

BLOCK = 1 << 14  # events converted to Python lists at a time (two blocks are alive at once)


class Rows(RunStore):
    """Timeline rows (node, track, start, dur, category, flags, correlation), spilled to disk in runs
    sorted by (start, track) once they pass ``spill.RUN_ROWS``; merged into column files at the end."""

    FIELDS = ("node", "track", "start_ns", "dur_ns", "category", "flags", "correlation")

    def __init__(self, temp: TempArea) -> None:
        super().__init__(len(self.FIELDS), _timeline_order, key=2, temp=temp, stem="timeline")


def _timeline_order(records: I64) -> npt.NDArray[np.intp]:
    return np.lexsort((records[:, 1], records[:, 2]))


def _order_by(field: int) -> Any:
    def order(records: I64) -> npt.NDArray[np.intp]:
        return np.argsort(records[:, field], kind="stable")

    return order


class Launches(RunStore):
    """Runtime calls with a correlation: (correlation, context node, External id of a call outside every
    op, else -1), in runs sorted (stably) by correlation: the launch side of the sort-merge join."""

    def __init__(self, temp: TempArea) -> None:
        super().__init__(3, _order_by(0), key=0, temp=temp, stem="launches")


class OpIds(RunStore):
    """(External id, node) of every op, in runs sorted (stably) by External id: the fallback for launches
    outside any op."""

    def __init__(self, temp: TempArea) -> None:
        super().__init__(2, _order_by(0), key=0, temp=temp, stem="ops")


class Joined(RunStore):
    """Device events after the join, in runs sorted by their position in the file:
    (idx, context node or -1 when unlinked, start, dur, kind, name, device, stream, correlation)."""

    def __init__(self, temp: TempArea) -> None:
        super().__init__(9, _order_by(0), key=0, temp=temp, stem="joined")


class Tree:
    """ProfileBuilder plus a cache keyed by the tables' own frame indices (cheaper than hashing Frames)."""

    def __init__(self, frames: list[Frame]) -> None:
        self.b = ProfileBuilder()
        self.frames = frames
        self._kids: dict[tuple[int, int], int] = {}

    def child(self, parent: int, label: int) -> int:
        key = (parent, label)
        node = self._kids.get(key)
        if node is None:
            node = self._kids[key] = self.b.child(parent, self.frames[label])
        return node

    def child_frame(self, parent: int, frame: Frame) -> int:
        return self.b.child(parent, frame)

    def path_frames(self, node: int, stop: int = 0) -> list[Frame]:
        out: list[Frame] = []
        while node > 0 and node != stop:
            out.append(self.b.frame_of(node))
            node = self.b.parent_of(node)
        out.reverse()
        return out

    def common_ancestor(self, a: int, b: int) -> int:
        """The deepest node that is ``a`` or an ancestor of it and ``b`` or an ancestor of it."""
        up = set()
        node = a
        while node > 0:
            up.add(node)
            node = self.b.parent_of(node)
        node = b
        while node > 0 and node not in up:
            node = self.b.parent_of(node)
        return node

    def forward_context(self, op_node: int) -> int:
        """The nearest ancestor of ``op_node`` that is not an op or a compiled region: its user line /
        module context."""
        node = op_node
        while node > 0 and self.b.frame_of(node).kind in (FrameKind.OP, FrameKind.REGION):
            node = self.b.parent_of(node)
        return node


def build_timeline(tracks: list[Track], rows: Rows, temp: TempArea) -> Timeline:
    """The rows sorted by (start, track), stably. Spilled rows are merged into one file per column and
    mapped (copy-on-write) from there: the timeline then lives in the page cache, not in the heap."""
    dtypes = [np.dtype(TIMELINE_DTYPES[name]) for name in Rows.FIELDS]
    rows.finish()
    if not rows.spilled:
        records = rows.runs[0].data if rows.runs else np.zeros((0, len(dtypes)), np.int64)
        cols = {name: records[:, i].astype(dt) for i, (name, dt) in enumerate(zip(Rows.FIELDS, dtypes, strict=True))}
        rows.close()
        return Timeline.from_columns(cols, tuple(tracks))
    paths = [temp.path(f"column-{name}") for name in Rows.FIELDS]
    files = [open(p, "wb") for p in paths]  # noqa: SIM115  (closed below)
    try:
        for w in rows.windows():
            w = w[np.lexsort((w[:, 1], w[:, 2]))]
            for i, fh in enumerate(files):
                w[:, i].astype(dtypes[i]).tofile(fh)
    finally:
        for fh in files:
            fh.close()
        rows.close()
    cols = {}
    for name, path, dt in zip(Rows.FIELDS, paths, dtypes, strict=True):
        with open(path, "rb") as src:
            mm = mmap.mmap(src.fileno(), 0, access=mmap.ACCESS_COPY)
        os.unlink(path)  # the mapping keeps the data; nothing is left behind on disk
        cols[name] = np.frombuffer(mm, dtype=dt)
    return Timeline.from_columns(cols, tuple(tracks))
