"""Nesting by time, per thread: the host sweep of the engine (see ``engine`` for the rules).

Host records are swept in (thread, start, longest first, outer kind first) order with a stack per
thread; each becomes a frame under the innermost enclosing one. Backward work is re-homed under its
forward op's context here (by sequence number; a dropped forward op is bracketed by the forward ops
around it), compiled kernels go to the placer, runtime calls record their launches for the device join.
"""

from __future__ import annotations

import array
import bisect
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..model import Category, Frame, FrameKind
from .fold_state import FoldState
from .records import GRAPH_CALL, Kind
from .stores import BLOCK, Launches, OpIds, Tree
from .tables import HostTable

# stack entry fields
_END, _NODE, _DUR, _CHILD, _FLOPS, _CHILD_FLOPS, _BW, _KIND, _LABEL, _NB, _PLACED, _IN_OP, _PEND = range(13)
# _NB: the bytes the op reads and writes (-1: not recorded); _IN_OP: an op is at or above the entry;
# _PEND: (node, bytes) its ops counted, held until the outermost op decides (``bytes_up``)
# backward work with no forward op and no context of its own (gradient accumulation, DDP's reducer)
NO_FORWARD_SCOPE = "backward without a forward op"
# what already gives an op its Python context: a recorded `Call stack` inside one of these adds nothing
_PLACING = frozenset({Kind.PYTHON, Kind.MODULE, Kind.OP})
# value -1: the frame's call (or the range's) was counted in an earlier window
_CALL_ROWS = frozenset({Kind.PYTHON, Kind.MODULE, Kind.SCOPE})


def sweep_host(engine: FoldState, launches: Launches) -> dict[int, int]:
    """Nest host events; the launches go to ``launches``. Returns the fallback context (the first op with
    that External id) of every External id of a launch outside any op that has one."""
    tables = engine.tables
    tree = engine.tree
    rows = engine.rows
    cpu_time, op_time, count, flops = engine.cpu_time, engine.op_time, engine.count, engine.flops
    alloc, nbytes, warnings = engine.alloc, engine.nbytes, engine.warnings
    h = tables.host
    n = len(h)
    if n == 0:
        return {}
    h.finish()
    bw_set = h.bw_threads
    bw_labels = tables.backward_labels
    # autograd threads after forward threads: their ops look up forward ops
    thread_order = sorted(h.groups(), key=lambda t: (t in bw_set, t))
    host_rows = engine.host_timeline
    placer = engine.placer
    watch = engine.watch
    watched = engine.watched.append
    spans = engine.op_spans.append if engine.op_spans is not None else None
    frames = tables.frames

    b = tree.b
    child = tree.child
    r_add = rows.data.extend
    ops = OpIds(tables.temp)  # External id and node of every op: the fallback for launches outside any op
    o_add = ops.data.extend
    l_add = launches.data.extend
    fwd_seq = engine.fwd_seq  # sequence number -> forward op node
    fwd_prev = engine.fwd_prev
    fwd_seq_from_bw = engine.fwd_seq_from_bw
    K_STEP, K_OP, K_RUNTIME, K_SYNC, K_MEMORY = Kind.STEP, Kind.OP, Kind.RUNTIME, Kind.SYNC, Kind.MEMORY
    K_REGION, K_OVERHEAD, K_STACK, K_PYTHON = Kind.REGION, Kind.OVERHEAD, Kind.STACK, Kind.PYTHON
    stacks = tables.stacks
    C_OP, C_RUNTIME, C_SYNC, C_FRAME = (int(c) for c in (Category.OP, Category.RUNTIME, Category.SYNC, Category.FRAME))
    overlaps = 0
    unmatched_bw = 0
    bracketed = 0
    nearest = _Bracket(tree, fwd_seq, fwd_prev)
    pending_ext = array.array("q")  # External ids of runtime calls with no op around them

    stack: list[list[Any]] = []

    def finish_placed(e: list[Any], self_t: float) -> None:
        token, moved = e[_PLACED]
        metrics = {"count": 1.0, "cpu_time_ns": float(max(self_t, 0))}
        if not engine.device_seen:
            metrics["time_ns"] = metrics["cpu_time_ns"]
        if moved > 0:
            metrics["bytes"] = float(moved)
        placer.finish(token, metrics, b)  # type: ignore[union-attr]

    def bytes_up(e: list[Any]) -> None:
        """One rule for FLOPs and bytes: the op that does the work carries both. The op that counts FLOPs
        (the innermost op with a FLOP rule: ``aten::addmm`` under ``aten::linear``) takes its own bytes in
        place of what its inner ops moved; in a subtree without one, bytes sit on the outermost op that
        recorded tensor inputs (``aten::relu``, not ``aten::clamp_min``). A compiled kernel placed by the
        placer carries its own bytes. What an op counted waits on its enclosing op until the outermost."""
        pend = e[_PEND]
        if e[_PLACED] is not None:
            return  # (its bytes went to the placer with its other metrics)
        nb_ = e[_NB]
        if nb_ >= 0 and not e[_CHILD_FLOPS]:  # (an op whose inner op counts FLOPs leaves bytes to it)
            pend = [(e[_NODE], nb_)] if nb_ > 0 else None
        if not pend:
            return
        if stack and stack[-1][_IN_OP]:
            top = stack[-1]
            if top[_PEND] is None:
                top[_PEND] = pend
            else:
                top[_PEND].extend(pend)
        else:
            for node, value in pend:
                nbytes[node] += value

    def pop() -> None:
        e = stack.pop()
        self_t = e[_DUR] - e[_CHILD]
        if e[_PLACED] is not None:
            finish_placed(e, self_t)
        elif self_t > 0:
            cpu_time[e[_NODE]] += self_t
            if e[_KIND] == K_OP:
                op_time[e[_NODE]] += self_t
        if e[_FLOPS] and not e[_CHILD_FLOPS]:
            flops[e[_NODE]] += e[_FLOPS]
        if e[_IN_OP]:
            bytes_up(e)
        if stack:
            top = stack[-1]
            top[_CHILD] += e[_DUR]
            if e[_FLOPS] or e[_CHILD_FLOPS]:
                top[_CHILD_FLOPS] = True

    def backward_parent(sq: int, parent: int) -> int:
        """Where an autograd op goes: under the forward context of the op with its sequence number (or, when
        that op is not in the trace, of the forward ops around it); else under the context that ran backward()."""
        nonlocal bracketed, unmatched_bw
        fwd_op = fwd_seq.get(sq)
        if fwd_op is None:
            fwd_op = fwd_prev.get(sq)
        if fwd_op is not None:
            return tree.child_frame(tree.forward_context(fwd_op), Frame.backward())
        around = nearest.context(sq) if sq >= 0 else None
        if around is not None:
            bracketed += 1
            return tree.child_frame(around, Frame.backward())
        if sq >= 0:  # (gradient accumulation has no sequence number: no forward op to miss)
            unmatched_bw += 1
        if parent == base:
            parent = tree.child_frame(base, Frame.scope(NO_FORWARD_SCOPE))
        return tree.child_frame(parent, Frame.backward())

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
                pid, tid = tables.threads[t]
                track = engine.track("thread", pid, tid)
                is_bw_thread = t in bw_set
            s = st[i]
            e_ = en[i]
            while stack and stack[-1][_END] <= s:  # close what ended before this event
                pop()
            if (
                stack and e_ > stack[-1][_END]
            ):  # starts inside, ends after: clip it to its parent (rounding, clock skew)
                # (a Python row's end moves no op's time: clipping it is not worth a warning. A live run's
                # row for an op called straight from a function spans that op, which can start a
                # microsecond before its previous sibling ends. Nor is the session's own work's: it ends the
                # program's record_function ranges as a window stops, inside its own row)
                if kd[i] != K_PYTHON and kd[i] != K_OVERHEAD:
                    overlaps += 1
                e_ = stack[-1][_END]
            parent = stack[-1][_NODE] if stack else base
            k = kd[i]
            if k == K_MEMORY:
                alloc[parent] += val[i]
                continue
            if k == K_OVERHEAD:
                if stack:
                    stack[-1][_CHILD] += e_ - s
                continue
            in_bw = bool(stack) and stack[-1][_BW]
            if k == K_STACK:
                # an op's recorded Python stack (Kineto's `Call stack`): its user frames go just outside the
                # op, unless the trace's own python events already place it or it runs inside another op
                if any(e[_KIND] in _PLACING for e in stack):
                    continue
                node = parent
                for label in stacks[nm[i]]:
                    node = child(node, label)
                stack.append([e_, node, e_ - s, 0, 0, False, in_bw, Kind.PYTHON, -1, -1, None, False, None])
                continue
            placed: list[Any] | None = None  # a compiled kernel's [placer token, bytes moved]
            if k in (K_RUNTIME, K_SYNC):
                node = parent
                c = corr[i]
                if c >= 0:
                    if not stack and ext[i] >= 0:
                        pending_ext.append(ext[i])
                        l_add((c, node, ext[i]))
                    else:
                        l_add((c, node, -1))
                if host_rows:
                    r_add((node, track, s, e_ - s, C_SYNC if k == K_SYNC else C_RUNTIME, 0, c))
            elif k == K_STEP:
                step = child(base, nm[i])
                count[step] += 1
                node = b.path(tree.path_frames(parent, stop=base), start=step) if parent != base else step
                if host_rows:
                    r_add((step, track, s, e_ - s, C_FRAME, 0, -1))
            else:
                label = nm[i]
                if in_bw and k == K_OP and stack and stack[-1][_LABEL] == label and label in bw_labels:
                    # the autograd node's own op inside `evaluate_function: X`: folded into it
                    stack.append([e_, parent, e_ - s, 0, val[i], False, True, k, -1, nb[i], None, True, None])
                    continue
                if k in (K_OP, K_REGION) and not in_bw and (fw[i] > 0 or label in bw_labels):
                    # an autograd op (every vintage marks them with a Fwd thread id): under the forward
                    # context of the op with its sequence number; else under the context that ran backward()
                    parent = backward_parent(seq[i], parent)
                    in_bw = True
                at = None
                if placer is not None and k == K_OP and not (stack and stack[-1][_KIND] == K_OP):
                    at = placer.begin(frames[label].name, in_bw, _placement_context(tree, parent, in_bw), b)
                if at is not None:
                    node, placed = at[0], [at[1], 0]
                else:
                    node = child(parent, label)
                    if val[i] >= 0 or k not in _CALL_ROWS:  # (a frame running on from an earlier window: no call)
                        count[node] += 1
                if label in watch:
                    watched((label, node, t, s, e_))
                if k in (K_OP, K_REGION):
                    sq = seq[i]
                    if sq >= 0 and fw[i] <= 0 and (not is_bw_thread or sq not in fwd_seq or sq in fwd_seq_from_bw):
                        fwd_seq[sq] = node
                        if is_bw_thread:
                            fwd_seq_from_bw.add(sq)
                    if k == K_REGION and placer is not None and frames[label].name == GRAPH_CALL:
                        placer.enter_graph()
                if k == K_OP:
                    if spans is not None:
                        spans((node, t, s, e_))
                    if ext[i] >= 0:
                        o_add((ext[i], node))
                    if corr[i] >= 0:  # a live op launches its kernels itself (correlation id)
                        l_add((corr[i], node, -1))
                    if host_rows:
                        r_add((node, track, s, e_ - s, C_OP, 0, -1))
                elif host_rows and placed is None:
                    r_add((node, track, s, e_ - s, C_FRAME, 0, -1))
            if placed is not None and nb[i] > 0:
                placed[1] = nb[i]  # split with the kernel's other metrics
            flop = val[i] if k == K_OP and placed is None else 0.0
            in_op = k == K_OP or (bool(stack) and stack[-1][_IN_OP])
            stack.append(
                [e_, node, e_ - s, 0, flop, False, in_bw, k, nm[i], nb[i] if k == K_OP else -1, placed, in_op, None]
            )
    while stack:
        pop()

    if overlaps:
        warnings["host events ending after their parent (clipped to it)"] += overlaps
    if unmatched_bw:
        warnings["backward ops without a matching forward op"] += unmatched_bw
    if bracketed:
        warnings["backward ops whose forward op is not in the trace, placed by the forward ops around it"] += bracketed
    return fallback_contexts(ops, pending_ext)


def fallback_contexts(ops: OpIds, pending_ext: array.array[int]) -> dict[int, int]:
    """A runtime call outside every op on its thread: fall back to the (first) op with its External id.
    Returns that op's node for each of ``pending_ext``; closes ``ops``."""
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
    return ext_nodes


class _Bracket:
    """The context of a forward op that is not in the trace (sampled traces drop events), from the forward
    ops that are: it ran between the ops with the nearest lower and higher sequence numbers, so it ran
    inside both their contexts' common ancestor (call stacks nest in time). None when that is the root."""

    def __init__(self, tree: Tree, fwd_seq: dict[int, int], fwd_prev: dict[int, int]) -> None:
        self.tree = tree
        self.maps = (fwd_seq, fwd_prev)
        self._keys: list[int] = []
        self._seen = -1

    def context(self, seq: int) -> int | None:
        size = len(self.maps[0]) + len(self.maps[1])
        if size != self._seen:  # forward ops were added since: re-sort (misses are rare and come in runs)
            self._keys = sorted({*self.maps[0], *self.maps[1]})
            self._seen = size
        keys = self._keys
        at = bisect.bisect_left(keys, seq)
        if at == 0 or at >= len(keys):
            return None
        lo, hi = self._op(keys[at - 1]), self._op(keys[at])
        tree = self.tree
        common = tree.common_ancestor(tree.forward_context(lo), tree.forward_context(hi))
        return common if common > 0 else None

    def _op(self, seq: int) -> int:
        node = self.maps[0].get(seq)
        return node if node is not None else self.maps[1][seq]


def _placement_context(tree: Tree, parent: int, in_bw: bool) -> int:
    """Where a compiled kernel's fused lines hang: in forward, the op's context; in backward, the forward
    context above the ``backward`` frame (the paths the placer adds end with their own ``backward``)."""
    if not in_bw:
        return parent
    b = tree.b
    node = parent
    while node > 0:
        if b.frame_of(node).kind is FrameKind.BACKWARD:
            return b.parent_of(node)
        node = b.parent_of(node)
    return parent


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
            for lo in range(0, len(w), BLOCK):
                yield w[lo : lo + BLOCK].T.tolist()
