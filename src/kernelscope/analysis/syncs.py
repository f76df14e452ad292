"""Host-device synchronisation points, their user line and the GPU idle time that follows each.

A sync point is one of

- a synchronising runtime call (timeline category SYNC: ``cudaStreamSynchronize``,
  ``cudaDeviceSynchronize``, ``hipDeviceSynchronize``, ...);
- an ``aten::item`` / ``aten::_local_scalar_dense`` op (from OP rows; when the timeline has no
  OP rows, from the tree, counted but without timing);
- a device-to-pageable copy (``Memcpy DtoH (Device -> Pageable)``): the host blocks until it is done.

They nest (``aten::item`` ⊃ ``_local_scalar_dense`` ⊃ ``cudaMemcpyAsync`` + ``cudaStreamSynchronize``),
so on one host thread a point inside another is folded into the outermost one. The idle time
after a point is how long the GPU (of the copy, or every device of the rank for host calls)
stayed idle from the point's end until its next event started, cut at the next sync point on
the same thread: back-to-back syncs (a pageable copy, then ``cudaStreamSynchronize``) share one
idle stretch, which goes to the last of them, so no idle time is counted twice.
"""

from __future__ import annotations

import enum
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ..model import FrameKind, Profile
from ..model.timeline import Category, Timeline
from .context import ContextIndex
from .intervals import idle_after, merge
from .rows import device_rows, launching_call, rank_of, row_devices

ITEM_OPS = frozenset({"aten::item", "aten::_local_scalar_dense"})
TOP_POINTS = 10


class SyncKind(enum.Enum):
    SYNC_CALL = "sync_call"
    ITEM = "item"
    PAGEABLE_COPY = "pageable_copy"


def is_pageable_dtoh(name: str) -> bool:
    return "DtoH" in name and "Pageable" in name


@dataclass(frozen=True)
class SyncPoint:
    kind: SyncKind
    name: str
    track: str
    start_ns: int
    dur_ns: int  # host time blocked (for a copy without its launch: the copy itself)
    idle_after_ns: int
    op: str | None
    line: str | None
    nested: int = 0  # sync points folded into this one

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "name": self.name,
            "track": self.track,
            "start_ns": self.start_ns,
            "duration_us": self.dur_ns / 1e3,
            "idle_after_us": self.idle_after_ns / 1e3,
            "op": self.op,
            "line": self.line,
            "nested": self.nested,
        }


@dataclass(frozen=True)
class SyncLine:
    line: str | None
    count: int
    host_ns: int
    idle_after_ns: int
    names: tuple[tuple[str, int], ...]  # what synchronised there, by count

    def to_json(self) -> dict[str, Any]:
        return {
            "line": self.line,
            "count": self.count,
            "host_time_ms": self.host_ns / 1e6,
            "idle_after_ms": self.idle_after_ns / 1e6,
            "names": dict(self.names),
        }


@dataclass(frozen=True)
class Syncs:
    count: int
    host_ns: int
    idle_after_ns: int
    by_line: tuple[SyncLine, ...]
    top: tuple[SyncPoint, ...]
    untimed: tuple[tuple[str | None, str, int], ...] = field(default=())  # (line, op, calls) from the tree only

    def to_json(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "host_time_ms": self.host_ns / 1e6,
            "idle_after_ms": self.idle_after_ns / 1e6,
            "by_line": [s.to_json() for s in self.by_line],
            "top": [p.to_json() for p in self.top],
            "untimed": [{"line": ln, "op": op, "count": n} for ln, op, n in self.untimed],
        }


@dataclass(frozen=True)
class _Candidate:
    kind: SyncKind
    row: int  # the row that names the point (sync call, op, copy)
    context: int  # the node whose op and line the point reports
    host_track: int  # track the host blocked on (the copy's own stream when its launch is unknown)
    start: int
    end: int
    devices: tuple[int, ...]  # device indices whose idle follows the point


class _OpCalls:
    """OP rows by (node, start): which call of an op encloses a moment on a thread."""

    def __init__(self, tl: Timeline) -> None:
        rows = np.flatnonzero(tl.category == int(Category.OP))
        rows = rows[np.lexsort((tl.start_ns[rows], tl.node[rows]))]
        self.rows = rows
        self.nodes = tl.node[rows]
        self.starts = tl.start_ns[rows]
        self.ends = self.starts + tl.dur_ns[rows]
        self.tracks = tl.track[rows]

    def enclosing(self, node: int, track: int, start: int, end: int) -> int:
        """The OP row of ``node`` on ``track`` that contains ``[start, end]``, or -1."""
        lo = int(np.searchsorted(self.nodes, node, side="left"))
        hi = int(np.searchsorted(self.nodes, node, side="right"))
        i = lo + int(np.searchsorted(self.starts[lo:hi], start, side="right")) - 1
        if i >= lo and self.ends[i] >= end and self.tracks[i] == track:
            return int(self.rows[i])
        return -1


def _name_indices(profile: Profile, pred: Any) -> npt.NDArray[np.int32]:
    return np.asarray([i for i, f in enumerate(profile.frames) if pred(f)], dtype=np.int32)


def _candidates(profile: Profile, tl: Timeline) -> list[_Candidate]:
    cat = tl.category
    frame_of_row = profile.frame[tl.node]
    devs = row_devices(tl)
    device_names = sorted({t.device for t in tl.tracks})
    rank_devices: dict[str, tuple[int, ...]] = {}
    for i, d in enumerate(device_names):
        if any(t.device == d and t.kind == "stream" for t in tl.tracks):
            rank_devices[rank_of(d)] = (*rank_devices.get(rank_of(d), ()), i)

    def host_devices(row: int) -> tuple[int, ...]:
        return rank_devices.get(rank_of(tl.tracks[int(tl.track[row])].device), ())

    # (kind, naming row, context row, host track, start, end, devices)
    raw: list[tuple[SyncKind, int, int, int, int, int, tuple[int, ...]]] = []
    end = tl.start_ns + tl.dur_ns
    for r in np.flatnonzero(cat == int(Category.SYNC)).tolist():
        raw.append((SyncKind.SYNC_CALL, r, r, int(tl.track[r]), int(tl.start_ns[r]), int(end[r]), host_devices(r)))
    item_frames = _name_indices(profile, lambda f: f.kind is FrameKind.OP and f.name in ITEM_OPS)
    for r in np.flatnonzero((cat == int(Category.OP)) & np.isin(frame_of_row, item_frames)).tolist():
        raw.append((SyncKind.ITEM, r, r, int(tl.track[r]), int(tl.start_ns[r]), int(end[r]), host_devices(r)))
    copy_frames = _name_indices(profile, lambda f: is_pageable_dtoh(f.name))
    copies = np.flatnonzero(device_rows(tl) & (cat == int(Category.MEMCPY)) & np.isin(frame_of_row, copy_frames))
    if copies.size:
        call = launching_call(tl)
        for r in copies.tolist():
            c = int(call[r])
            if c >= 0:  # the host blocked from the copy call's start until the copy (and the call) ended
                raw.append(
                    (
                        SyncKind.PAGEABLE_COPY,
                        r,
                        c,
                        int(tl.track[c]),
                        int(tl.start_ns[c]),
                        max(int(end[c]), int(end[r])),
                        (int(devs[r]),),
                    )
                )
            else:
                raw.append(
                    (SyncKind.PAGEABLE_COPY, r, r, int(tl.track[r]), int(tl.start_ns[r]), int(end[r]), (int(devs[r]),))
                )
    # A sync inside an op call stands for that call: one `.cpu()` is one point, however many
    # copies and synchronize calls it made.
    calls = _OpCalls(tl)
    out: list[_Candidate] = []
    for kind, row, ctx_row, track, start, stop, devices in raw:
        node = int(tl.node[ctx_row])
        if cat[ctx_row] != int(Category.OP) and profile.frame_of(node).kind is FrameKind.OP:
            op_row = calls.enclosing(node, track, start, stop)
            if op_row >= 0:
                start, stop = int(tl.start_ns[op_row]), int(end[op_row])
        out.append(_Candidate(kind, row, node, track, start, stop, devices))
    return out


def _fold(cands: list[_Candidate]) -> list[tuple[_Candidate, int]]:
    """Keep the outermost point of each nest on a host track; count what was folded into it."""
    cands = sorted(cands, key=lambda c: (c.host_track, c.start, -c.end, c.kind.value))
    out: list[tuple[_Candidate, int]] = []
    for c in cands:
        if out:
            top, n = out[-1]
            if top.host_track == c.host_track and c.start >= top.start and c.end <= top.end:
                out[-1] = (top, n + 1)
                continue
        out.append((c, 0))
    return out


def syncs(profile: Profile, top: int = TOP_POINTS) -> Syncs:
    tl = profile.timeline
    ctx = ContextIndex(profile)
    untimed = _untimed_items(profile, ctx)
    if tl is None or len(tl) == 0:
        return Syncs(0, 0, 0, _by_line([], untimed), (), untimed)
    devs = row_devices(tl)
    dev = device_rows(tl)
    merged: dict[int, tuple[Any, Any]] = {}
    for d in np.unique(devs[dev]).tolist():
        m = dev & (devs == d)
        merged[d] = merge(tl.start_ns[m], tl.start_ns[m] + tl.dur_ns[m])
    points: list[SyncPoint] = []
    folded = _fold(_candidates(profile, tl))
    for i, (c, nested) in enumerate(folded):
        waits = []
        for d in c.devices:
            if d in merged:
                ms, me = merged[d]
                waits.append(int(idle_after(ms, me, np.asarray([c.end], dtype=np.int64))[0]))
        wait = min(waits) if waits else 0
        if i + 1 < len(folded) and folded[i + 1][0].host_track == c.host_track:
            # the next sync on this thread takes over: idle is never claimed twice
            wait = max(0, min(wait, folded[i + 1][0].start - c.end))
        node = c.context
        name = _point_name(profile, c)
        points.append(
            SyncPoint(
                kind=c.kind,
                name=name,
                track=tl.tracks[c.host_track].name,
                start_ns=c.start,
                dur_ns=c.end - c.start,
                idle_after_ns=wait,
                op=ctx.op(node),
                line=ctx.line(node),
                nested=nested,
            )
        )
    ranked = sorted(points, key=lambda p: (-p.idle_after_ns, -p.dur_ns, p.start_ns))[:top]
    return Syncs(
        count=len(points),
        host_ns=sum(p.dur_ns for p in points),
        idle_after_ns=sum(p.idle_after_ns for p in points),
        by_line=_by_line(points, untimed),
        top=tuple(ranked),
        untimed=untimed,
    )


def _point_name(profile: Profile, c: _Candidate) -> str:
    tl = profile.timeline
    assert tl is not None
    f = profile.frame_of(int(tl.node[c.row]))
    if c.kind is SyncKind.SYNC_CALL:
        # SYNC rows point at their context node: the call's own name is kept only when that
        # node names it (an importer may give sync calls their own frame).
        return f.name if "ynchronize" in f.name else "synchronize"
    return f.name


def _untimed_items(profile: Profile, ctx: ContextIndex) -> tuple[tuple[str | None, str, int], ...]:
    """``aten::item`` calls known only from the tree (the timeline has no OP rows)."""
    tl = profile.timeline
    if tl is not None and bool((tl.category == int(Category.OP)).any()):
        return ()
    counts = profile.exclusive("count")
    out: Counter[tuple[str | None, str]] = Counter()
    for node in range(1, len(profile)):
        f = profile.frame_of(node)
        if f.kind is FrameKind.OP and f.name in ITEM_OPS:
            # the outermost item op of a nest stands for the call
            par = int(profile.parent[node])
            if par > 0 and profile.frame_of(par).kind is FrameKind.OP and profile.frame_of(par).name in ITEM_OPS:
                continue
            out[(ctx.line(node), f.name)] += max(1, int(counts[node]))
    return tuple(sorted(((ln, op, n) for (ln, op), n in out.items()), key=lambda x: (-x[2], x[0] or "", x[1])))


def _by_line(points: list[SyncPoint], untimed: tuple[tuple[str | None, str, int], ...]) -> tuple[SyncLine, ...]:
    acc: dict[str | None, tuple[int, int, int, Counter[str]]] = {}
    for p in points:
        n, h, i, names = acc.get(p.line, (0, 0, 0, Counter()))
        names[p.name] += 1
        acc[p.line] = (n + 1, h + p.dur_ns, i + p.idle_after_ns, names)
    for line, op, k in untimed:
        n, h, i, names = acc.get(line, (0, 0, 0, Counter()))
        names[op] += k
        acc[line] = (n + k, h, i, names)
    rows = [
        SyncLine(line, n, h, i, tuple(sorted(names.items(), key=lambda x: (-x[1], x[0]))))
        for line, (n, h, i, names) in acc.items()
    ]
    rows.sort(key=lambda s: (-s.idle_after_ns, -s.host_ns, -s.count, s.line or ""))
    return tuple(rows)
