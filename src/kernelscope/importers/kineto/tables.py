"""Compact columns of the events the joins need: the only per-event memory the import keeps.

Host events (annotations, user python frames, ops, runtime calls, allocations) and device events
(kernels, copies, sets) go into typed ``array`` columns, 8 bytes per number, about 70 bytes per
kept event; names are interned once. Framework python frames, flows and everything else are
dropped as they are read.
"""

from __future__ import annotations

import array
from collections import Counter
from collections.abc import Iterable
from typing import Any

from ...model import Frame
from .events import CATEGORIES, Kind, RawEvent, host_kind, is_comm_kernel, region_name
from .flops import op_flops
from .pyframes import python_frame

_LIMIT = 1 << 62  # ns; anything larger is not a timestamp


def _ns(value: Any) -> int | None:
    """Kineto µs (int or fractional) -> int ns; None when it is not a usable number."""
    t = type(value)
    if t is float:
        if value != value or abs(value) > 4e15:  # NaN, or beyond ~2^62 ns
            return None
        return int(value * 1000.0 + (0.5 if value >= 0 else -0.5))
    if t is int:
        ns: int = value * 1000
        return ns if -_LIMIT < ns < _LIMIT else None
    return None


def _int(value: Any) -> int | None:
    if type(value) is int and -_LIMIT < value < _LIMIT:
        return value
    return None


class HostTable:
    def __init__(self) -> None:
        self.thread = array.array("i")
        self.start = array.array("q")
        self.dur = array.array("q")
        self.kind = array.array("b")
        self.name = array.array("i")  # index into EventTables.frames (runtime: into .names)
        self.ext = array.array("q")
        self.corr = array.array("q")
        self.seq = array.array("q")
        self.fwd = array.array("q")
        self.value = array.array("d")  # FLOPs (ops) or bytes (allocations)

    def __len__(self) -> int:
        return len(self.start)

    def nbytes(self) -> int:
        return sum(col.itemsize * len(col) for col in vars(self).values())


class DeviceTable:
    def __init__(self) -> None:
        self.start = array.array("q")
        self.dur = array.array("q")
        self.kind = array.array("b")
        self.name = array.array("i")  # index into EventTables.names
        self.device = array.array("i")
        self.stream = array.array("q")
        self.corr = array.array("q")

    def __len__(self) -> int:
        return len(self.start)

    def nbytes(self) -> int:
        return sum(col.itemsize * len(col) for col in vars(self).values())


class EventTables:
    """Fed batch by batch by the reader; ``build`` turns it into a Profile."""

    def __init__(self, warnings: Counter[str]) -> None:
        self.warnings = warnings
        self.host = HostTable()
        self.device = DeviceTable()
        self.frames: list[Frame] = []
        self._frame_index: dict[Frame, int] = {}
        self.names: list[str] = []
        self._name_index: dict[str, int] = {}
        self.threads: list[tuple[Any, Any]] = []
        self._thread_index: dict[tuple[Any, Any], int] = {}
        # (cat, name) -> (kind, frame-or-name index); -1 index = skip
        self._classes: dict[tuple[Any, Any], tuple[Kind, int]] = {}
        self.triton_files: dict[str, str] = {}
        self.events_seen = 0
        self.categories: Counter[str] = Counter()

    # --- interning ---------------------------------------------------------
    def _frame(self, frame: Frame) -> int:
        idx = self._frame_index.get(frame)
        if idx is None:
            idx = self._frame_index[frame] = len(self.frames)
            self.frames.append(frame)
        return idx

    def name_id(self, name: str) -> int:
        idx = self._name_index.get(name)
        if idx is None:
            idx = self._name_index[name] = len(self.names)
            self.names.append(name)
        return idx

    def _thread(self, pid: Any, tid: Any) -> int:
        key = (pid, tid)
        idx = self._thread_index.get(key)
        if idx is None:
            idx = self._thread_index[key] = len(self.threads)
            self.threads.append(key)
        return idx

    def _classify(self, cat: Any, name: Any) -> tuple[Kind, int]:
        """Kind and interned label of an (X-phase) event; cached per distinct (cat, name)."""
        key = (cat, name)
        try:
            hit = self._classes.get(key)
        except TypeError:  # a list or dict where a string belongs
            return Kind.UNKNOWN, -1
        if hit is not None:
            return hit
        result = self._classify_new(cat, name)
        self._classes[key] = result
        return result

    def _classify_new(self, cat: Any, name: Any) -> tuple[Kind, int]:
        if not isinstance(cat, str) or not isinstance(name, str):
            return Kind.UNKNOWN, -1
        base = CATEGORIES.get(cat.lower())
        if base is None:
            return Kind.UNKNOWN, -1
        if base is Kind.PYTHON:
            frame = python_frame(name)
            if frame is None:
                return Kind.SKIP, -1
            kind = Kind.MODULE if name.startswith("nn.Module: ") else Kind.PYTHON
            return kind, self._frame(frame)
        if base in (Kind.SCOPE, Kind.OP):
            kind = host_kind(base, name)
            if kind is Kind.REGION:
                return kind, self._frame(Frame.region(region_name(name)))
            if kind is Kind.OP:
                return kind, self._frame(Frame.op(name))
            return kind, self._frame(Frame.scope(name))
        if base is Kind.RUNTIME:
            return host_kind(base, name), self.name_id(name)
        if base is Kind.KERNEL and is_comm_kernel(name):
            return Kind.COMM, self.name_id(name)
        if base in (Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET):
            return base, self.name_id(name)
        return base, -1

    # --- the hot loop --------------------------------------------------------
    def add(self, events: Iterable[RawEvent]) -> None:
        h, d, w = self.host, self.device, self.warnings
        h_thread, h_start, h_dur, h_kind = h.thread.append, h.start.append, h.dur.append, h.kind.append
        h_name, h_ext, h_corr, h_seq, h_fwd, h_val = (
            h.name.append,
            h.ext.append,
            h.corr.append,
            h.seq.append,
            h.fwd.append,
            h.value.append,
        )
        classify, thread_of = self._classify, self._thread
        cats = self.categories
        n = 0
        for ev in events:
            n += 1
            ph = ev.ph
            if ph == "X":
                kind, label = classify(ev.cat, ev.name)
                if label < 0:
                    if kind is Kind.UNKNOWN:
                        cats[str(ev.cat)] += 1
                    continue
                start = _ns(ev.ts)
                dur = _ns(ev.dur)
                if start is None or dur is None:
                    w["events with a missing or invalid ts/dur"] += 1
                    continue
                if dur < 0:
                    w["negative durations clamped to 0"] += 1
                    dur = 0
                args = ev.args
                if kind >= Kind.KERNEL:  # device event
                    corr = _int(args.correlation) if args is not None else None
                    dev = _int(args.device) if args is not None else None
                    stream = _int(args.stream) if args is not None else None
                    if dev is None:
                        dev = _int(ev.pid)
                    if stream is None:
                        stream = _int(ev.tid)
                    if dev is None or stream is None:
                        w["device events without device/stream ids"] += 1
                        dev = 0 if dev is None else dev
                        stream = 0 if stream is None else stream
                    if corr is None:
                        w["device events without correlation"] += 1
                        corr = -1
                    if kind is Kind.KERNEL and args is not None and args.collective is not None:
                        kind = Kind.COMM
                    d.start.append(start)
                    d.dur.append(dur)
                    d.kind.append(kind)
                    d.name.append(label)
                    d.device.append(dev)
                    d.stream.append(stream)
                    d.corr.append(corr)
                    continue
                try:
                    thread = thread_of(ev.pid, ev.tid)
                except TypeError:
                    w["events with unusable pid/tid"] += 1
                    continue
                ext = corr = seq = fwd = -1
                value = 0.0
                if args is not None:
                    ext = _int(args.external_id) or -1
                    if kind is Kind.RUNTIME or kind is Kind.SYNC:
                        corr = _int(args.correlation)
                        if corr is None:
                            corr = -1
                    elif kind is Kind.OP:
                        s = _int(args.seq)
                        if s is not None and s >= 0:
                            seq = s
                            f = _int(args.fwd_tid)
                            fwd = 0 if f is None else f
                        if args.input_dims is not None:
                            value = op_flops(self.frames[label].name, args.input_dims, args.concrete)
                        kf = args.kernel_file
                        if type(kf) is str:
                            self.triton_files[self.frames[label].name] = kf
                h_thread(thread)
                h_start(start)
                h_dur(dur)
                h_kind(kind)
                h_name(label)
                h_ext(ext)
                h_corr(corr)
                h_seq(seq)
                h_fwd(fwd)
                h_val(value)
            elif ph == "i" or ph == "I":
                args = ev.args
                if ev.name != "[memory]" or args is None:
                    continue
                nbytes = args.nbytes
                if type(nbytes) is not int and type(nbytes) is not float:
                    w["memory events without Bytes"] += 1
                    continue
                if nbytes <= 0:
                    continue
                start = _ns(ev.ts)
                if start is None:
                    w["events with a missing or invalid ts/dur"] += 1
                    continue
                try:
                    thread = thread_of(ev.pid, ev.tid)
                except TypeError:
                    w["events with unusable pid/tid"] += 1
                    continue
                h_thread(thread)
                h_start(start)
                h_dur(0)
                h_kind(Kind.MEMORY)
                h_name(-1)
                h_ext(-1)
                h_corr(-1)
                h_seq(-1)
                h_fwd(-1)
                h_val(float(nbytes))
            elif ph is None:
                w["events without ph"] += 1
        self.events_seen += n
