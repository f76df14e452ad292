"""Compact columns of the events the joins need.

Host rows and device rows are spilled to disk in sorted runs once they pass ``spill.RUN_ROWS``
(see ``spill``).

Host events (annotations, user python frames, ops, runtime calls, allocations) and device events
(kernels, copies, sets) go into typed ``array`` columns, 8 bytes per number, about 70 bytes per
kept event; names are interned once. Framework python frames, flows and everything else are
dropped as they are read.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import numpy as np
import numpy.typing as npt

from ...model import Frame
from .events import BACKWARD_PREFIX, CATEGORIES, Kind, RawEvent, host_kind, is_comm_kernel, region_name
from .flops import FLOP_RULES, op_flops
from .pyframes import python_frame
from .spill import I64, RunStore, TempArea

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


class HostTable(RunStore):
    """Host events, spilled to disk in sorted runs once they pass ``spill.RUN_ROWS`` (80 bytes each).

    Runs are sorted by (thread, start, longest first, outer kind first); ``windows(thread)`` merges
    them back one thread at a time (see ``spill``). ``min_start`` and ``bw_threads`` (threads with
    ops that carry ``Fwd thread id``) are gathered as the runs are written.
    """

    # name: index into EventTables.frames (runtime calls: into .names); value: FLOPs (ops) or bytes (allocations)
    FIELDS = ("thread", "start", "dur", "kind", "name", "ext", "corr", "seq", "fwd", "value")

    def __init__(self, temp: TempArea) -> None:
        super().__init__(len(self.FIELDS), _host_order, key=1, temp=temp, stem="host", group=0)
        self.min_start: int | None = None
        self.bw_threads: set[int] = set()

    def _sorted(self) -> I64:
        records = self._records()
        if len(records):
            first = int(records[:, 1].min())
            self.min_start = first if self.min_start is None else min(self.min_start, first)
            bw = (records[:, 3] == Kind.OP) & (records[:, 8] > 0)
            if bw.any():
                self.bw_threads.update(np.unique(records[bw, 0]).tolist())
        return records[_host_order(records)]


def _host_order(records: I64) -> npt.NDArray[np.intp]:
    start = records[:, 1]
    return np.lexsort((records[:, 3], -(start + records[:, 2]), start, records[:, 0]))


class DeviceTable(RunStore):
    """Device events (kernels, copies, sets), spilled to disk in runs sorted by correlation (stably:
    ``idx``, the order in which they were read, breaks ties) for the sort-merge join with the launches.
    ``min_start`` is gathered as the runs are written."""

    # name: index into EventTables.names; idx: position in the file's order of device events
    FIELDS = ("start", "dur", "kind", "name", "device", "stream", "corr", "idx")

    def __init__(self, temp: TempArea) -> None:
        super().__init__(len(self.FIELDS), _device_order, key=6, temp=temp, stem="device")
        self.min_start: int | None = None

    def _sorted(self) -> I64:
        records = self._records()
        if len(records):
            first = int(records[:, 0].min())
            self.min_start = first if self.min_start is None else min(self.min_start, first)
        return records[_device_order(records)]


def _device_order(records: I64) -> npt.NDArray[np.intp]:
    return np.argsort(records[:, 6], kind="stable")


class EventTables:
    """Fed batch by batch by the reader; ``build`` turns it into a Profile."""

    def __init__(self, warnings: Counter[str], temp: TempArea | None = None) -> None:
        self.warnings = warnings
        self.temp = temp if temp is not None else TempArea()
        self.host = HostTable(self.temp)
        self.device = DeviceTable(self.temp)
        self.frames: list[Frame] = []
        self._frame_index: dict[Frame, int] = {}
        self.names: list[str] = []
        self._name_index: dict[str, int] = {}
        self.threads: list[tuple[Any, Any]] = []
        self._thread_index: dict[tuple[Any, Any], int] = {}
        # (cat, name) -> (kind, frame-or-name index); -1 index = skip
        self._classes: dict[tuple[Any, Any], tuple[Kind, int]] = {}
        self.triton_files: dict[str, str] = {}
        self.backward_labels: set[int] = set()  # frames of `autograd::engine::evaluate_function: X` ops
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
                if name.startswith(BACKWARD_PREFIX):
                    # `autograd::engine::evaluate_function: XBackward0` is the autograd node X: one op
                    # frame for it (the X op inside folds into it), as live runs name it
                    label = self._frame(Frame.op(name[len(BACKWARD_PREFIX) :]))
                    self.backward_labels.add(label)
                    return kind, label
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
        w = self.warnings
        host, device = self.host.data.extend, self.device.data.extend
        classes, classify, thread_of = self._classes, self._classify, self._thread
        cats = self.categories
        n = 0
        n_dev = len(self.device)
        for ev in events:
            n += 1
            ph = ev.ph
            if ph == "X":
                cat, name = ev.cat, ev.name
                try:
                    hit = classes.get((cat, name))
                except TypeError:
                    hit = (Kind.UNKNOWN, -1)
                kind, label = hit if hit is not None else classify(cat, name)
                if label < 0:
                    if kind is Kind.UNKNOWN:
                        cats[str(cat)[:200]] += 1
                    continue
                ts, du = ev.ts, ev.dur
                if type(ts) is float and type(du) is float and 0.0 <= ts < 4e15 and -4e15 < du < 4e15:
                    start = int(ts * 1000.0 + 0.5)
                    dur = int(du * 1000.0 + (0.5 if du >= 0 else -0.5))
                else:
                    start_, dur_ = _ns(ts), _ns(du)
                    if start_ is None or dur_ is None:
                        w["events with a missing or invalid ts/dur"] += 1
                        continue
                    start, dur = start_, dur_
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
                    if dev is None or stream is None or not (0 <= dev < 1 << 31):
                        w["device events without device/stream ids"] += 1
                        dev = 0 if dev is None or not (0 <= dev < 1 << 31) else dev
                        stream = 0 if stream is None else stream
                    if corr is None:
                        w["device events without correlation"] += 1
                        corr = -1
                    if kind is Kind.KERNEL and args is not None and args.collective is not None:
                        kind = Kind.COMM
                    device((start, dur, kind, label, dev, stream, corr, n_dev))
                    n_dev += 1
                    continue
                try:
                    thread = thread_of(ev.pid, ev.tid)
                except TypeError:
                    w["events with unusable pid/tid"] += 1
                    continue
                ext = corr = seq = fwd = -1
                value = 0
                if args is not None:
                    ext = _int(args.external_id) or -1
                    if kind is Kind.RUNTIME or kind is Kind.SYNC:
                        c = _int(args.correlation)
                        corr = -1 if c is None else c
                    elif kind is Kind.OP:
                        s = _int(args.seq)
                        if s is not None and s >= 0:
                            seq = s
                            f = _int(args.fwd_tid)
                            fwd = 0 if f is None else f
                        op = self.frames[label].name
                        if op in FLOP_RULES:
                            value = int(op_flops(op, args.input_dims, args.concrete))
                        kf = args.kernel_file
                        if type(kf) is str:
                            # a Triton launch from compiled code: context for its kernel, not an op
                            self.triton_files[op] = kf
                            kind = Kind.REGION
                            label = self._frame(Frame.region(op))
                host((thread, start, dur, kind, label, ext, corr, seq, fwd, value))
            elif ph == "i" or ph == "I":
                args = ev.args
                if ev.name != "[memory]" or args is None:
                    continue
                nbytes = args.nbytes
                if type(nbytes) is not int and type(nbytes) is not float:
                    w["memory events without Bytes"] += 1
                    continue
                if not 0 < nbytes < _LIMIT:
                    continue
                start_ = _ns(ev.ts)
                if start_ is None:
                    w["events with a missing or invalid ts/dur"] += 1
                    continue
                try:
                    thread = thread_of(ev.pid, ev.tid)
                except TypeError:
                    w["events with unusable pid/tid"] += 1
                    continue
                host((thread, start_, 0, Kind.MEMORY, -1, -1, -1, -1, -1, int(nbytes)))
            elif ph is None:
                w["events without ph"] += 1
        self.events_seen += n
        self.host.maybe_spill()
        self.device.maybe_spill()

    def close(self) -> None:
        """Remove the spilled runs (the profile, once built, does not need them)."""
        self.host.close()
        self.device.close()
        self.temp.close()
