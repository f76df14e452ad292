"""Device events to their launching context: a sort-merge join by correlation of spilled runs."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

import numpy as np

from ..model import Category, Frame
from ..model.timeline import LINKED
from .fold_state import FoldState
from .records import Kind
from .spill import I64
from .stores import BLOCK, Joined, Launches

UNLINKED_SCOPE = "launched before trace"
_DEVICE_CATEGORY = {
    Kind.KERNEL: Category.KERNEL,
    Kind.MEMCPY: Category.MEMCPY,
    Kind.MEMSET: Category.MEMSET,
    Kind.COMM: Category.COMM,
}


def join_device(engine: FoldState, launches: Launches, ext_nodes: dict[int, int]) -> defaultdict[int, float]:
    """Kernels, copies and sets under the context of the runtime call that launched them.

    A sort-merge join on disk: the device events (runs sorted by correlation) against the launches
    (runs sorted by correlation; the first launch of a correlation wins), window by window. The joined
    rows go to runs sorted by file position; kernel nodes are made in the order of the first device
    event of each (context, kernel), i.e. exactly as one pass over the events in file order would.
    """
    tables, tree, rows, warnings = engine.tables, engine.tree, engine.rows, engine.warnings
    time_ns: defaultdict[int, float] = defaultdict(float)
    d = tables.device
    if len(d) == 0:
        return time_ns
    joined = Joined(tables.temp)
    try:
        first_of, pairs, n_unlinked = _merge_join(d.windows(window_rows=BLOCK), launches, ext_nodes, joined)
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
        track_of = {p: engine.track("stream", p[0], p[1]) for p in sorted(pairs)}

        nn = len(tree.b)
        totals = np.zeros(nn, np.float64)
        calls = np.zeros(nn, np.int64)
        for w in joined.windows(window_rows=BLOCK):
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
                        lut[inverse.reshape(-1)],
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
    return time_ns


def _merge_join(
    device_windows: Iterator[I64], launches: Launches, ext_nodes: dict[int, int], joined: Joined
) -> tuple[dict[tuple[int, int, int, int], int], set[tuple[int, int]], int]:
    """Join device windows (by correlation) with the launches; the rows go to ``joined``. Returns the first
    file position of every (context, name, device, stream), the (device, stream) pairs, and the number of
    device events without a launch."""
    first_of: dict[tuple[int, int, int, int], int] = {}
    pairs: set[tuple[int, int]] = set()
    n_unlinked = 0
    l_corr = np.zeros(0, np.int64)
    l_node = np.zeros(0, np.int64)
    l_windows = launches.windows(window_rows=BLOCK)
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
