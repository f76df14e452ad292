"""Compact columns of the event records the joins need.

Host rows and device rows are spilled to disk in sorted runs once they pass ``spill.RUN_ROWS``
(see ``spill``).

Host events (annotations, user python frames, ops, runtime calls, allocations) and device events
(kernels, copies, sets) go into typed ``array`` columns, 8 bytes per number, about 70 bytes per
kept event; names are interned once. Framework python frames, flows and everything else are
dropped as they are read.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import numpy.typing as npt

from ..model import Frame
from .records import BACKWARD_PREFIX, Kind, host_kind, region_name
from .spill import I64, RunStore, TempArea

_LIMIT = 1 << 62  # ns; anything larger is not a timestamp
_AUTOGRAD_KINDS = np.array([Kind.OP, Kind.REGION], dtype=np.int64)  # what a `Fwd thread id` marks as backward


def us_to_ns(value: Any) -> int | None:
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


def bounded_int(value: Any) -> int | None:
    if type(value) is int and -_LIMIT < value < _LIMIT:
        return value
    return None


class HostTable(RunStore):
    """Host events, spilled to disk in sorted runs once they pass ``spill.RUN_ROWS`` (80 bytes each).

    Runs are sorted by (thread, start, longest first, outer kind first); ``windows(thread)`` merges
    them back one thread at a time (see ``spill``). ``min_start`` and ``bw_threads`` (threads with
    ops or regions that carry ``Fwd thread id``) are gathered as the runs are written.
    """

    # name: index into EventTables.frames (runtime calls: into .names); value: FLOPs (ops) or bytes (allocations)
    FIELDS = ("thread", "start", "dur", "kind", "name", "ext", "corr", "seq", "fwd", "value", "bytes")

    def __init__(self, temp: TempArea) -> None:
        super().__init__(len(self.FIELDS), _host_order, key=1, temp=temp, stem="host", group=0)
        self.min_start: int | None = None
        self.bw_threads: set[int] = set()

    def _sorted(self) -> I64:
        records = self._records()
        if len(records):
            first = int(records[:, 1].min())
            self.min_start = first if self.min_start is None else min(self.min_start, first)
            # (a compiled backward may mark only its `CompiledFunctionBackward` region)
            bw = np.isin(records[:, 3], _AUTOGRAD_KINDS) & (records[:, 8] > 0)
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
    """The normalised record stream: fed by a collector or an importer, turned into a Profile by
        ``engine``. Host rows: (thread, start, dur, kind, label, ext, corr, seq, fwd, value, bytes) with ``label``
        a frame index (runtime calls: a name index), ``value`` FLOPs (ops) or bytes (allocations), ``bytes``
    what an op reads and writes (attribute.costs.op_bytes; -1: the op recorded no tensor input)."""

    def __init__(self, warnings: Counter[str], temp: TempArea | None = None) -> None:
        self.warnings = warnings
        self.temp = temp if temp is not None else TempArea()
        self.host = HostTable(self.temp)
        self.device = DeviceTable(self.temp)
        self.frames: list[Frame] = []
        self._frame_index: dict[Frame, int] = {}
        self.names: list[str] = []
        self._name_index: dict[str, int] = {}
        # Python call stacks recorded on ops (Kind.STACK rows): frame labels, outermost first
        self.stacks: list[tuple[int, ...]] = []
        self._stack_index: dict[tuple[int, ...], int] = {}
        self.threads: list[tuple[Any, Any]] = []
        self._thread_index: dict[tuple[Any, Any], int] = {}
        self.triton_files: dict[str, str] = {}
        # communication kernels that recorded their collective: correlation -> (collective, group, seq or -1)
        self.collectives: dict[int, tuple[str, str, int]] = {}
        self.backward_labels: set[int] = set()  # frames of `autograd::engine::evaluate_function: X` ops
        self.events_seen = 0
        self.categories: Counter[str] = Counter()

    # --- interning ---------------------------------------------------------
    def frame(self, frame: Frame) -> int:
        """The label (frame index) of ``frame``; what host rows carry in their ``name`` column."""
        idx = self._frame_index.get(frame)
        if idx is None:
            idx = self._frame_index[frame] = len(self.frames)
            self.frames.append(frame)
        return idx

    def host_label(self, base: Kind, name: str) -> tuple[Kind, int]:
        """Kind and label of an op or annotation by its name — one rule for every source: steps,
        compiled regions, and ``autograd::engine::evaluate_function: X``, which is the autograd node X
        (one op frame; the X op recorded inside it folds into it)."""
        kind = host_kind(base, name)
        if kind is Kind.REGION:
            return kind, self.frame(Frame.region(*region_name(name)))
        if kind is Kind.OP:
            if name.startswith(BACKWARD_PREFIX):
                label = self.frame(Frame.op(name[len(BACKWARD_PREFIX) :]))
                self.backward_labels.add(label)
                return kind, label
            return kind, self.frame(Frame.op(name))
        return kind, self.frame(Frame.scope(name))

    def stack(self, frames: tuple[Frame, ...]) -> int:
        """The label of a Python call stack (user frames, outermost first); what Kind.STACK rows carry."""
        labels = tuple(self.frame(f) for f in frames)
        idx = self._stack_index.get(labels)
        if idx is None:
            idx = self._stack_index[labels] = len(self.stacks)
            self.stacks.append(labels)
        return idx

    def name_id(self, name: str) -> int:
        idx = self._name_index.get(name)
        if idx is None:
            idx = self._name_index[name] = len(self.names)
            self.names.append(name)
        return idx

    def thread(self, pid: Any, tid: Any) -> int:
        key = (pid, tid)
        idx = self._thread_index.get(key)
        if idx is None:
            idx = self._thread_index[key] = len(self.threads)
            self.threads.append(key)
        return idx

    def reset_rows(self) -> None:
        """Empty the row stores for the next window (interned frames, names and threads stay)."""
        self.host.close()
        self.device.close()
        self.host = HostTable(self.temp)
        self.device = DeviceTable(self.temp)

    def close(self) -> None:
        """Remove the spilled runs (the profile, once built, does not need them)."""
        self.host.close()
        self.device.close()
        self.temp.close()
