"""Idle gaps between consecutive device events on each stream, and why the stream waited.

A gap is classified by the event that ends it:

- ``host_wait``: its launching runtime call started only after the previous event on the
  stream had finished: the GPU ran dry because the host was late (CPU-bound step,
  a sync, Python overhead);
- ``kernel_wait``: otherwise, a gap shorter than ``kernel_wait_ns`` (default 5 µs, a few
  launch latencies): the ordinary cost of starting the next queued kernel;
- ``other``: a longer gap although the work was already queued (waits on another stream
  or an event), or a next event whose launch is not in the trace.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..model import Profile
from .context import ContextIndex
from .rows import device_rows, launching_call

KERNEL_WAIT_NS = 5_000
TOP_GAPS = 10


class GapClass(enum.Enum):
    HOST_WAIT = "host_wait"
    KERNEL_WAIT = "kernel_wait"
    OTHER = "other"


_CLASS_CODE = {GapClass.HOST_WAIT: 0, GapClass.KERNEL_WAIT: 1, GapClass.OTHER: 2}
_CLASSES = tuple(_CLASS_CODE)


@dataclass(frozen=True)
class ClassTotal:
    count: int
    time_ns: int

    def to_json(self) -> dict[str, Any]:
        return {"count": self.count, "time_ms": self.time_ns / 1e6}


@dataclass(frozen=True)
class StreamGaps:
    device: str
    stream: str
    events: int
    classes: tuple[tuple[GapClass, ClassTotal], ...]

    @property
    def gaps(self) -> int:
        return sum(c.count for _, c in self.classes)

    @property
    def idle_ns(self) -> int:
        return sum(c.time_ns for _, c in self.classes)

    def to_json(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "stream": self.stream,
            "events": self.events,
            "gaps": self.gaps,
            "idle_time_ms": self.idle_ns / 1e6,
            "classes": {k.value: c.to_json() for k, c in self.classes},
        }


@dataclass(frozen=True)
class Gap:
    device: str
    stream: str
    gap_class: GapClass
    start_ns: int  # end of the event before the gap
    dur_ns: int
    kernel: str  # the event after the gap
    op: str | None
    line: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "stream": self.stream,
            "class": self.gap_class.value,
            "start_ns": self.start_ns,
            "duration_us": self.dur_ns / 1e3,
            "kernel": self.kernel,
            "op": self.op,
            "line": self.line,
        }


@dataclass(frozen=True)
class IdleGaps:
    kernel_wait_ns: int
    streams: tuple[StreamGaps, ...]
    top: tuple[Gap, ...]

    def totals(self) -> dict[GapClass, ClassTotal]:
        out = {k: ClassTotal(0, 0) for k in _CLASSES}
        for s in self.streams:
            for k, c in s.classes:
                o = out[k]
                out[k] = ClassTotal(o.count + c.count, o.time_ns + c.time_ns)
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "kernel_wait_threshold_us": self.kernel_wait_ns / 1e3,
            "totals": {k.value: c.to_json() for k, c in self.totals().items()},
            "streams": [s.to_json() for s in self.streams],
            "top": [g.to_json() for g in self.top],
        }


def idle_gaps(profile: Profile, kernel_wait_ns: int = KERNEL_WAIT_NS, top: int = TOP_GAPS) -> IdleGaps:
    tl = profile.timeline
    if tl is None or len(tl) == 0:
        return IdleGaps(kernel_wait_ns, (), ())
    dev = device_rows(tl)
    launch = launching_call(tl)
    streams: list[StreamGaps] = []
    # Candidate gaps from every stream: (duration, class code, row after the gap, previous end).
    cand_dur: list[np.ndarray[Any, Any]] = []
    cand_cls: list[np.ndarray[Any, Any]] = []
    cand_row: list[np.ndarray[Any, Any]] = []
    cand_prev: list[np.ndarray[Any, Any]] = []
    for track in np.unique(tl.track[dev]).tolist():
        rows = np.flatnonzero(dev & (tl.track == track))
        rows = rows[np.argsort(tl.start_ns[rows], kind="stable")]
        starts = tl.start_ns[rows]
        reach = np.maximum.accumulate(starts + tl.dur_ns[rows])
        nxt = rows[1:]
        prev_end = reach[:-1]
        gap = starts[1:] - prev_end
        is_gap = gap > 0
        nxt, prev_end, gap = nxt[is_gap], prev_end[is_gap], gap[is_gap]
        call = launch[nxt]
        call_start = np.where(call >= 0, tl.start_ns[np.maximum(call, 0)], np.iinfo(np.int64).min)
        host = (call >= 0) & (call_start >= prev_end)
        short = ~host & (gap < kernel_wait_ns)
        code = np.full(gap.shape, _CLASS_CODE[GapClass.OTHER], dtype=np.int8)
        code[short] = _CLASS_CODE[GapClass.KERNEL_WAIT]
        code[host] = _CLASS_CODE[GapClass.HOST_WAIT]
        t = tl.tracks[track]
        classes = tuple(
            (k, ClassTotal(int((code == c).sum()), int(gap[code == c].sum()))) for k, c in _CLASS_CODE.items()
        )
        streams.append(StreamGaps(t.device, t.name, int(rows.size), classes))
        cand_dur.append(gap)
        cand_cls.append(code)
        cand_row.append(nxt)
        cand_prev.append(prev_end)
    top_gaps: list[Gap] = []
    if cand_dur and top > 0:
        dur = np.concatenate(cand_dur)
        cls = np.concatenate(cand_cls)
        row = np.concatenate(cand_row)
        prev = np.concatenate(cand_prev)
        # Largest first; ties by time so the result is deterministic.
        order = np.lexsort((prev, -dur))[:top]
        ctx = ContextIndex(profile)
        for i in order.tolist():
            r = int(row[i])
            node = int(tl.node[r])
            t = tl.tracks[int(tl.track[r])]
            top_gaps.append(
                Gap(
                    t.device,
                    t.name,
                    _CLASSES[int(cls[i])],
                    int(prev[i]),
                    int(dur[i]),
                    ctx.name(node),
                    ctx.op(node),
                    ctx.line(node),
                )
            )
    streams.sort(key=lambda s: (s.device, s.stream))
    return IdleGaps(kernel_wait_ns, tuple(streams), tuple(top_gaps))
