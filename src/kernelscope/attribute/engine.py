"""The one attribution engine: the normalised records (``tables``) -> a calling-context tree.

Every source goes through it: Kineto chrome traces (importers/kineto) in one fold, live torch runs
(collect/torch_events) one window at a time. The rules, one module each:

1. Nesting by time per thread (``nesting``): records sorted by (thread, start, longest first, outer
   kind first) and swept with a stack; an event that starts inside another but ends after it is
   clipped to it (one skewed event cannot unnest everything after it). Ops, user python frames,
   modules, scopes and regions become frames under the innermost enclosing one; ``ProfilerStep#N``
   is hoisted to the top of its path; runtime calls take their context's node.
2. Backward (``nesting``): an autograd op (``Fwd thread id`` > 0, or ``evaluate_function: X``) with
   sequence number *s* goes under the forward context of the forward op *s* (the last two folds' ops),
   inside a ``backward`` frame; when that op is not in the trace, under the common context of the
   forward ops around *s*; else under ``[backward without a forward op]``. Compiled kernels go where
   the placer (torch.compile provenance, live runs) says.
3. Device events join their launch by correlation (``device_join``: a sort-merge join of spilled
   runs) and become kernel frames under its context; unmatched ones (launched before the trace) go
   under ``[launched before trace]``.

Metrics: ``cpu_time_ns`` is host self time (an event's duration minus its direct children's) of every
frame; ``time_ns`` is device time on kernel nodes, or with no device activity the self time of ops;
``count`` is the calls of the frame itself; ``flops`` and ``bytes`` on the op that does the work (one rule,
``nesting.bytes_up``): the innermost op with a FLOP rule carries both, its own bytes in place of its inner
ops'; elsewhere bytes sit on the innermost ops that recorded tensor inputs (``costs``); ``alloc_bytes`` on the
innermost context of each allocation.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import numpy as np

from ..model import Profile, Track
from .device_join import UNLINKED_SCOPE, join_device
from .fold_state import Placer
from .nesting import NO_FORWARD_SCOPE, sweep_host
from .stores import Launches, Rows, Tree, build_timeline
from .structure import user_structure
from .tables import EventTables

__all__ = ["NO_FORWARD_SCOPE", "UNLINKED_SCOPE", "Attributor", "build_profile"]


def build_profile(tables: EventTables, metadata: dict[str, Any], warnings: Counter[str]) -> Profile:
    """Every record in ``tables`` -> one Profile (an import: one fold)."""
    engine = Attributor(tables, warnings)
    engine.fold()
    return engine.build(metadata)


class Attributor:
    """Folds the records of ``tables`` into one calling-context tree, once (an import) or window by
    window (a live run: ``fold()`` after each window's records are written, ``build()`` at the end).
    The tree, the metric columns and the forward contexts of the last two folds persist between folds.

    ``host_timeline``: keep host rows for the timeline (an import); a live run keeps device rows only.
    ``watch``: labels whose nodes are reported in ``watched`` as (label, node, thread, start, end), so that a
    collector can attach what the records do not carry (a scope's metrics, a cast's dtypes) or keep a timeline
    row for them (a live run's collectives: ``add_rows``).
    """

    def __init__(
        self,
        tables: EventTables,
        warnings: Counter[str],
        *,
        host_timeline: bool = True,
        placer: Placer | None = None,
        watch: frozenset[int] = frozenset(),
    ) -> None:
        self.tables = tables
        self.warnings = warnings
        self.tree = Tree(tables.frames)
        self.rows = Rows(tables.temp)
        self.host_timeline = host_timeline
        self.placer = placer
        self.watch = watch
        self.watched: list[tuple[int, int, int, int, int]] = []
        # when a list: every op's (node, thread, start, end) is appended to it (native sampling places by them)
        self.op_spans: list[tuple[int, int, int, int]] | None = None
        self.cpu_time: defaultdict[int, float] = defaultdict(float)
        self.op_time: defaultdict[int, float] = defaultdict(float)
        self.device_time: defaultdict[int, float] = defaultdict(float)
        self.count: defaultdict[int, float] = defaultdict(float)
        self.flops: defaultdict[int, float] = defaultdict(float)
        self.alloc: defaultdict[int, float] = defaultdict(float)
        self.nbytes: defaultdict[int, float] = defaultdict(float)
        self.fwd_seq: dict[int, int] = {}  # sequence number -> forward op node (this fold)
        self.fwd_prev: dict[int, int] = {}  # ... the fold before (a backward may run a window later)
        self.fwd_seq_from_bw: set[int] = set()
        self.device_seen = False
        self.tracks: list[Track] = []
        self._track_index: dict[tuple[str, Any, Any], int] = {}

    def track(self, kind: str, a: Any, b: Any) -> int:
        key = (kind, a, b)
        idx = self._track_index.get(key)
        if idx is None:
            idx = self._track_index[key] = len(self.tracks)
            if kind == "thread":
                self.tracks.append(Track(f"thread {b}", "cpu", "thread"))
            else:
                self.tracks.append(Track(f"stream {b}", f"cuda:{a}", "stream"))
        return idx

    def named_track(self, name: str, device: str) -> int:
        """A track that is neither a thread nor a CUDA stream (a live run's collectives: ``gloo`` on ``cpu``)."""
        key = ("named", device, name)
        idx = self._track_index.get(key)
        if idx is None:
            idx = self._track_index[key] = len(self.tracks)
            self.tracks.append(Track(name, device, "stream"))
        return idx

    def add_rows(self, rows: list[tuple[int, int, int, int, int, int, int]]) -> None:
        """Timeline rows (node, track, start, dur, category, flags, correlation) found outside the fold."""
        if rows:
            self.rows.add_array(np.asarray(rows, dtype=np.int64))

    def fold(self) -> None:
        """Fold the records now in the tables (the tables' stores are emptied for the next window)."""
        t = self.tables
        for pid, tid in t.threads:
            self.track("thread", pid, tid)
        launches = Launches(t.temp)
        try:
            ext_nodes = sweep_host(self, launches)
            if len(t.device):
                self.device_seen = True
                time_ns = join_device(self, launches, ext_nodes)
                for node, value in time_ns.items():
                    self.device_time[node] += value
        finally:
            launches.close()
            t.reset_rows()
        self.fwd_prev, self.fwd_seq = self.fwd_seq, {}
        self.fwd_seq_from_bw = set()

    def flush(self) -> None:
        """Add the metrics folded so far to the tree's builder (and start the columns afresh), so that the
        builder is complete between folds."""
        b = self.tree.b
        time_ns = self.device_time if self.device_seen else self.op_time
        for name, col in (
            ("time_ns", time_ns),
            ("cpu_time_ns", self.cpu_time),
            ("count", self.count),
            ("flops", self.flops),
            ("bytes", self.nbytes),
            ("alloc_bytes", self.alloc),
        ):
            if col or name in ("time_ns", "count"):
                b.ensure_metric(name)
            for node, value in col.items():
                if value:
                    b.add(node, name, value)
            col.clear()
        self.op_time.clear()  # (whichever of the two time columns was not used)
        self.device_time.clear()

    def build(self, metadata: dict[str, Any]) -> Profile:
        self.flush()
        b = self.tree.b
        keep = self.host_timeline or len(self.rows) > 0
        timeline = build_timeline(self.tracks, self.rows, self.tables.temp) if keep else None
        if self.host_timeline or self.warnings:
            metadata = {**metadata, "import_warnings": dict(sorted(self.warnings.items()))}
        return user_structure(b.build(metadata, timeline))
