"""Joins and the calling-context tree: compact event tables -> Profile.

1. Host events are sorted by (thread, start, longest first, outer kind first) and swept with a
   stack per thread: nesting is time containment (an event that starts inside another but ends after
   it is clipped to it and counted, so that one skewed event cannot unnest everything after it). Each op, user python frame, module, scope and
   region becomes a frame under the innermost enclosing one; ``ProfilerStep#N`` is hoisted to the
   top of the path; runtime calls take the node of the innermost enclosing frame (their context).
2. Backward: on threads that run autograd (ops carrying ``Fwd thread id`` > 0), the outermost op
   with sequence number *s* is re-homed under the forward context of the last forward op with the
   same *s* (its path above the first op frame: user lines and modules) inside a ``backward`` frame.
   Unmatched backward work stays on its thread, under a top-level ``backward`` frame.
3. Device events join their runtime call by ``correlation`` (a sort-merge join of spilled runs, see
   ``_join_device``), and become kernel frames under the call's context. Unmatched ones (launched
   before the trace) go under ``[launched before trace]``.

Metrics: ``cpu_time_ns`` is host self time (an event's duration minus its direct children's);
``time_ns`` is device time on kernel nodes, or on CPU-only traces the self time of ops; ``count``
is calls per node; ``flops`` is put on the innermost op that has a FLOP rule; ``alloc_bytes`` on the
innermost context of each positive ``[memory]`` event.
"""

from __future__ import annotations

import array
import mmap
import os
from collections import Counter, defaultdict
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from ..model import Category, Frame, FrameKind, Profile, ProfileBuilder, Timeline, Track
from ..model.timeline import _COLUMNS as TIMELINE_DTYPES
from ..model.timeline import LINKED
from .records import Kind
from .spill import I64, RunStore, TempArea
from .tables import EventTables, HostTable

UNLINKED_SCOPE = "launched before trace"
# backward work with no forward op and no context of its own (gradient accumulation, DDP's reducer)
NO_FORWARD_SCOPE = "backward without a forward op"

_DEVICE_CATEGORY = {
    Kind.KERNEL: Category.KERNEL,
    Kind.MEMCPY: Category.MEMCPY,
    Kind.MEMSET: Category.MEMSET,
    Kind.COMM: Category.COMM,
}

_BLOCK = 1 << 14  # events converted to Python lists at a time (two blocks are alive at once)

# stack entry fields
_END, _NODE, _DUR, _CHILD, _FLOPS, _CHILD_FLOPS, _BW, _KIND, _LABEL, _MEASURED = range(10)


class _Rows(RunStore):
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


class _Launches(RunStore):
    """Runtime calls with a correlation: (correlation, context node, External id of a call outside every
    op, else -1), in runs sorted (stably) by correlation: the launch side of the sort-merge join."""

    def __init__(self, temp: TempArea) -> None:
        super().__init__(3, _order_by(0), key=0, temp=temp, stem="launches")


class _OpIds(RunStore):
    """(External id, node) of every op, in runs sorted (stably) by External id: the fallback for launches
    outside any op."""

    def __init__(self, temp: TempArea) -> None:
        super().__init__(2, _order_by(0), key=0, temp=temp, stem="ops")


class _Joined(RunStore):
    """Device events after the join, in runs sorted by their position in the file:
    (idx, context node or -1 when unlinked, start, dur, kind, name, device, stream, correlation)."""

    def __init__(self, temp: TempArea) -> None:
        super().__init__(9, _order_by(0), key=0, temp=temp, stem="joined")


class _Tree:
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

    def forward_context(self, op_node: int) -> int:
        """The nearest ancestor of ``op_node`` that is not an op or a compiled region: its user line /
        module context."""
        node = op_node
        while node > 0 and self.b.frame_of(node).kind in (FrameKind.OP, FrameKind.REGION):
            node = self.b.parent_of(node)
        return node


def build_profile(tables: EventTables, metadata: dict[str, Any], warnings: Counter[str]) -> Profile:
    tree = _Tree(tables.frames)
    rows = _Rows(tables.temp)
    cpu_time: defaultdict[int, float] = defaultdict(float)
    op_time: defaultdict[int, float] = defaultdict(float)
    count: defaultdict[int, float] = defaultdict(float)
    flops: defaultdict[int, float] = defaultdict(float)
    alloc: defaultdict[int, float] = defaultdict(float)
    nbytes: defaultdict[int, float] = defaultdict(float)
    launches = _Launches(tables.temp)
    try:
        ext_nodes = _sweep_host(tables, tree, rows, launches, cpu_time, op_time, count, flops, alloc, nbytes, warnings)
        cpu_only = len(tables.device) == 0
        time_ns, stream_tracks = _join_device(tables, tree, rows, launches, ext_nodes, warnings)
    finally:
        launches.close()
    if cpu_only:
        time_ns = op_time
    b = tree.b
    for name, col in (
        ("time_ns", time_ns),
        ("cpu_time_ns", cpu_time),
        ("count", count),
        ("flops", flops),
        ("bytes", nbytes),
        ("alloc_bytes", alloc),
    ):
        if col or name in ("time_ns", "count"):
            b.ensure_metric(name)
        for node, value in col.items():
            if value:
                b.add(node, name, value)
    timeline = _timeline(_thread_tracks(tables) + stream_tracks, rows, tables.temp)
    metadata = {**metadata, "import_warnings": dict(sorted(warnings.items()))}
    return b.build(metadata, timeline)


def _thread_tracks(tables: EventTables) -> list[Track]:
    return [Track(f"thread {tid}", "cpu", "thread") for _pid, tid in tables.threads]


def _sweep_host(
    tables: EventTables,
    tree: _Tree,
    rows: _Rows,
    launches: _Launches,
    cpu_time: defaultdict[int, float],
    op_time: defaultdict[int, float],
    count: defaultdict[int, float],
    flops: defaultdict[int, float],
    alloc: defaultdict[int, float],
    nbytes: defaultdict[int, float],
    warnings: Counter[str],
) -> dict[int, int]:
    """Nest host events; the launches go to ``launches``. Returns the fallback context (the first op with
    that External id) of every External id of a launch outside any op that has one."""
    h = tables.host
    n = len(h)
    if n == 0:
        return {}
    h.finish()
    bw_set = h.bw_threads
    bw_labels = tables.backward_labels
    # autograd threads after forward threads: their ops look up forward ops
    thread_order = sorted(h.groups(), key=lambda t: (t in bw_set, t))

    b = tree.b
    child = tree.child
    r_add = rows.data.extend
    ops = _OpIds(tables.temp)  # External id and node of every op: the fallback for launches outside any op
    o_add = ops.data.extend
    l_add = launches.data.extend
    fwd_seq: dict[int, int] = {}  # sequence number -> forward op node
    fwd_seq_from_bw: set[int] = set()
    K_STEP, K_OP, K_RUNTIME, K_SYNC, K_MEMORY = Kind.STEP, Kind.OP, Kind.RUNTIME, Kind.SYNC, Kind.MEMORY
    K_REGION = Kind.REGION
    C_OP, C_RUNTIME, C_SYNC = int(Category.OP), int(Category.RUNTIME), int(Category.SYNC)
    overlaps = 0
    unmatched_bw = 0
    pending_ext = array.array("q")  # External ids of runtime calls with no op around them

    stack: list[list[Any]] = []

    def pop() -> None:
        e = stack.pop()
        self_t = e[_DUR] - e[_CHILD]
        if self_t > 0:
            cpu_time[e[_NODE]] += self_t
            if e[_KIND] == K_OP:
                op_time[e[_NODE]] += self_t
        if e[_FLOPS] and not e[_CHILD_FLOPS]:
            flops[e[_NODE]] += e[_FLOPS]
        if stack:
            top = stack[-1]
            top[_CHILD] += e[_DUR]
            if e[_FLOPS] or e[_CHILD_FLOPS]:
                top[_CHILD_FLOPS] = True

    cur = -1
    base = 0
    track = 0
    is_bw_thread = False
    for th, st, en, kd, nm, ext, corr, seq, fw, val, nb in _host_blocks(h, thread_order):
        rows.maybe_spill()
        r_add = rows.data.extend
        launches.maybe_spill()
        l_add = launches.data.extend
        ops.maybe_spill()
        o_add = ops.data.extend
        for i in range(len(th)):
            t = th[i]
            if t != cur:
                while stack:
                    pop()
                cur = t
                track = t
                is_bw_thread = t in bw_set
            s = st[i]
            e_ = en[i]
            while stack:  # close what ended before this event (pop(), inlined: the hottest loop)
                e = stack[-1]
                if e[_END] > s:
                    if e_ > e[_END]:  # starts inside, ends after: clip it to its parent (rounding, clock skew)
                        overlaps += 1
                        e_ = e[_END]
                    break
                stack.pop()
                self_t = e[_DUR] - e[_CHILD]
                if self_t > 0:
                    cpu_time[e[_NODE]] += self_t
                    if e[_KIND] == K_OP:
                        op_time[e[_NODE]] += self_t
                if e[_FLOPS] and not e[_CHILD_FLOPS]:
                    flops[e[_NODE]] += e[_FLOPS]
                if stack:
                    top = stack[-1]
                    top[_CHILD] += e[_DUR]
                    if e[_FLOPS] or e[_CHILD_FLOPS]:
                        top[_CHILD_FLOPS] = True
            parent = stack[-1][_NODE] if stack else base
            k = kd[i]
            if k == K_MEMORY:
                alloc[parent] += val[i]
                continue
            in_bw = bool(stack) and stack[-1][_BW]
            if k in (K_RUNTIME, K_SYNC):
                node = parent
                c = corr[i]
                if c >= 0:
                    if not stack and ext[i] >= 0:
                        pending_ext.append(ext[i])
                        l_add((c, node, ext[i]))
                    else:
                        l_add((c, node, -1))
                r_add((node, track, s, e_ - s, C_SYNC if k == K_SYNC else C_RUNTIME, 0, c))
            elif k == K_STEP:
                step = child(base, nm[i])
                count[step] += 1
                node = b.path(tree.path_frames(parent, stop=base), start=step) if parent != base else step
            else:
                label = nm[i]
                if in_bw and k == K_OP and stack and stack[-1][_LABEL] == label and label in bw_labels:
                    # the autograd node's own op inside `evaluate_function: X`: folded into it
                    stack.append([e_, parent, e_ - s, 0, val[i], False, True, k, -1, stack[-1][_MEASURED]])
                    continue
                if k in (K_OP, K_REGION) and not in_bw and (fw[i] > 0 or label in bw_labels):
                    # an autograd op (every vintage marks them with a Fwd thread id): under the forward
                    # context of the op with its sequence number; else under the context that ran backward()
                    fwd_op = fwd_seq.get(seq[i])
                    if fwd_op is not None:
                        parent = tree.child_frame(tree.forward_context(fwd_op), Frame.backward())
                    else:
                        unmatched_bw += 1
                        if parent == base:
                            parent = tree.child_frame(base, Frame.scope(NO_FORWARD_SCOPE))
                        parent = tree.child_frame(parent, Frame.backward())
                    in_bw = True
                node = child(parent, nm[i])
                count[node] += 1
                if k in (K_OP, K_REGION):
                    sq = seq[i]
                    if sq >= 0 and fw[i] <= 0 and (not is_bw_thread or sq not in fwd_seq or sq in fwd_seq_from_bw):
                        fwd_seq[sq] = node
                        if is_bw_thread:
                            fwd_seq_from_bw.add(sq)
                if k == K_OP:
                    if ext[i] >= 0:
                        o_add((ext[i], node))
                    r_add((node, track, s, e_ - s, C_OP, 0, -1))
            measured = bool(stack) and stack[-1][_MEASURED]
            if k == K_OP and not measured and nb[i] >= 0:
                # bytes on the outermost op that recorded tensor inputs (attribute.costs.op_bytes)
                measured = True
                if nb[i]:
                    nbytes[node] += nb[i]
            stack.append([e_, node, e_ - s, 0, val[i] if k == K_OP else 0.0, False, in_bw, k, nm[i], measured])
    while stack:
        pop()

    # A runtime call outside every op on its thread: fall back to the (first) op with its External id.
    ext_nodes: dict[int, int] = {}
    try:
        if pending_ext:
            wanted = np.unique(np.frombuffer(pending_ext, dtype=np.int64))
            for w in ops.windows():
                w = w[np.argsort(w[:, 0], kind="stable")]
                keys, first = np.unique(w[:, 0], return_index=True)  # windows never split equal keys
                hit = np.isin(keys, wanted)
                for k, node in zip(keys[hit].tolist(), w[first[hit], 1].tolist(), strict=True):
                    ext_nodes[k] = node
    finally:
        ops.close()
    if overlaps:
        warnings["host events ending after their parent (clipped to it)"] += overlaps
    if unmatched_bw:
        warnings["backward ops without a matching forward op"] += unmatched_bw
    return ext_nodes


def _host_blocks(h: HostTable, thread_order: list[int]) -> Iterator[list[list[Any]]]:
    """Host events in (thread, start, longest first, outer kind first) order, as Python lists per block,
    with ``end`` in place of ``dur``; threads in ``thread_order``, merged from the spilled runs."""
    for t in thread_order:
        for w in h.windows(group=t):
            start = w[:, 1]
            end = start + w[:, 2]
            order = np.lexsort((w[:, 3], -end, start))
            w[:, 2] = end
            w = w[order]
            for lo in range(0, len(w), _BLOCK):
                yield w[lo : lo + _BLOCK].T.tolist()


def _join_device(
    tables: EventTables,
    tree: _Tree,
    rows: _Rows,
    launches: _Launches,
    ext_nodes: dict[int, int],
    warnings: Counter[str],
) -> tuple[defaultdict[int, float], list[Track]]:
    """Kernels, copies and sets under the context of the runtime call that launched them.

    A sort-merge join on disk: the device events (runs sorted by correlation) against the launches
    (runs sorted by correlation; the first launch of a correlation wins), window by window. The joined
    rows go to runs sorted by file position; kernel nodes are made in the order of the first device
    event of each (context, kernel), i.e. exactly as one pass over the events in file order would.
    """
    time_ns: defaultdict[int, float] = defaultdict(float)
    d = tables.device
    if len(d) == 0:
        return time_ns, []
    joined = _Joined(tables.temp)
    try:
        first_of, pairs, n_unlinked = _merge_join(d.windows(window_rows=_BLOCK), launches, ext_nodes, joined)
        d.close()
        unlinked_node = 0
        if n_unlinked:
            unlinked_node = tree.child_frame(0, Frame.scope(UNLINKED_SCOPE))
            warnings["device events whose launch is not in the trace"] += n_unlinked

        names = tables.names
        kernel_frames: dict[tuple[int, int, int], Frame] = {}
        node_of: dict[tuple[int, int, int, int], int] = {}
        child_frame = tree.child_frame
        for key, _first in sorted(first_of.items(), key=lambda kv: kv[1]):
            c, name, dev, stream = key
            fkey = (name, dev, stream)
            frame = kernel_frames.get(fkey)
            if frame is None:
                frame = kernel_frames[fkey] = Frame.kernel(names[name], f"cuda:{dev}", stream)
            node_of[key] = child_frame(unlinked_node if c < 0 else c, frame)
        del first_of

        # stream tracks: one per (device, stream), in sorted order
        pair_list = sorted(pairs)
        track_of = {p: i for i, p in enumerate(pair_list)}
        base = len(tables.threads)
        stream_tracks = [Track(f"stream {s}", f"cuda:{dv}", "stream") for dv, s in pair_list]

        nn = len(tree.b)
        totals = np.zeros(nn, np.float64)
        calls = np.zeros(nn, np.int64)
        for w in joined.windows(window_rows=_BLOCK):
            w = w[np.argsort(w[:, 0], kind="stable")]
            ctx = w[:, 1]
            keys = zip(ctx.tolist(), w[:, 5].tolist(), w[:, 6].tolist(), w[:, 7].tolist(), strict=True)
            nodes = np.fromiter((node_of[k] for k in keys), dtype=np.int64, count=len(w))
            durs = w[:, 3]
            totals += np.bincount(nodes, weights=durs.astype(np.float64), minlength=nn)
            calls += np.bincount(nodes, minlength=nn)
            local, inverse = np.unique(w[:, 6:8], axis=0, return_inverse=True)
            lut = np.array([track_of[(dv, s)] for dv, s in local.tolist()], dtype=np.int64)
            kinds = w[:, 4]
            cat = np.zeros(len(w), dtype=np.int64)
            for k, c in _DEVICE_CATEGORY.items():
                cat[kinds == k] = int(c)
            rows.add_array(
                np.stack(
                    [
                        nodes,
                        lut[inverse.reshape(-1)] + base,
                        w[:, 2],
                        durs,
                        cat,
                        np.where(ctx >= 0, LINKED, 0).astype(np.int64),
                        w[:, 8],
                    ],
                    axis=1,
                )
            )
    finally:
        joined.close()
    for node in np.nonzero(calls)[0].tolist():
        time_ns[node] = float(totals[node])
    b = tree.b
    for node in np.nonzero(calls)[0].tolist():
        b.add(node, "count", float(calls[node]))
    return time_ns, stream_tracks


def _merge_join(
    device_windows: Iterator[I64], launches: _Launches, ext_nodes: dict[int, int], joined: _Joined
) -> tuple[dict[tuple[int, int, int, int], int], set[tuple[int, int]], int]:
    """Join device windows (by correlation) with the launches; the rows go to ``joined``. Returns the first
    file position of every (context, name, device, stream), the (device, stream) pairs, and the number of
    device events without a launch."""
    first_of: dict[tuple[int, int, int, int], int] = {}
    pairs: set[tuple[int, int]] = set()
    n_unlinked = 0
    l_corr = np.zeros(0, np.int64)
    l_node = np.zeros(0, np.int64)
    l_windows = launches.windows(window_rows=_BLOCK)
    l_done = False
    for w in device_windows:
        w = w[np.argsort(w[:, 6], kind="stable")]
        dcorr = w[:, 6]
        lo_c, hi_c = int(dcorr[0]), int(dcorr[-1])
        cut = int(np.searchsorted(l_corr, lo_c))
        l_corr, l_node = l_corr[cut:], l_node[cut:]
        while not l_done and (len(l_corr) == 0 or int(l_corr[-1]) <= hi_c):
            lw = next(l_windows, None)
            if lw is None:
                l_done = True
                break
            lw = lw[np.argsort(lw[:, 0], kind="stable")]
            corr, first = np.unique(lw[:, 0], return_index=True)  # windows never split equal keys
            node = lw[first, 1]
            pend = lw[first, 2]
            for i in np.nonzero(pend >= 0)[0].tolist():
                node[i] = ext_nodes.get(int(pend[i]), int(node[i]))
            keep = corr >= lo_c
            l_corr = np.concatenate([l_corr, corr[keep]])
            l_node = np.concatenate([l_node, node[keep]])
        if len(l_corr):
            pos = np.searchsorted(l_corr, dcorr)
            pos_c = np.minimum(pos, len(l_corr) - 1)
            linked = (dcorr >= 0) & (pos < len(l_corr)) & (l_corr[pos_c] == dcorr)
            ctx = np.where(linked, l_node[pos_c], -1)
        else:
            linked = np.zeros(len(w), bool)
            ctx = np.full(len(w), -1, np.int64)
        n_unlinked += int(len(w) - np.count_nonzero(linked))
        keys = zip(ctx.tolist(), w[:, 3].tolist(), w[:, 4].tolist(), w[:, 5].tolist(), strict=True)
        for key, idx in zip(keys, w[:, 7].tolist(), strict=True):
            f = first_of.get(key)
            if f is None or idx < f:
                first_of[key] = idx
        pairs.update(map(tuple, np.unique(w[:, 4:6], axis=0).tolist()))
        # (idx, ctx, start, dur, kind, name, device, stream, corr)
        joined.add_array(np.column_stack([w[:, 7], ctx, w[:, 0], w[:, 1], w[:, 2], w[:, 3], w[:, 4], w[:, 5], dcorr]))
    return first_of, pairs, n_unlinked


def _timeline(tracks: list[Track], rows: _Rows, temp: TempArea) -> Timeline:
    """The rows sorted by (start, track), stably. Spilled rows are merged into one file per column and
    mapped (copy-on-write) from there: the timeline then lives in the page cache, not in the heap."""
    dtypes = [np.dtype(TIMELINE_DTYPES[name]) for name in _Rows.FIELDS]
    rows.finish()
    if not rows.spilled:
        records = rows.runs[0].data if rows.runs else np.zeros((0, len(dtypes)), np.int64)
        cols = {name: records[:, i].astype(dt) for i, (name, dt) in enumerate(zip(_Rows.FIELDS, dtypes, strict=True))}
        rows.close()
        return Timeline.from_columns(cols, tuple(tracks))
    paths = [temp.path(f"column-{name}") for name in _Rows.FIELDS]
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
    for name, path, dt in zip(_Rows.FIELDS, paths, dtypes, strict=True):
        with open(path, "rb") as src:
            mm = mmap.mmap(src.fileno(), 0, access=mmap.ACCESS_COPY)
        os.unlink(path)  # the mapping keeps the data; nothing is left behind on disk
        cols[name] = np.frombuffer(mm, dtype=dt)
    return Timeline.from_columns(cols, tuple(tracks))
