"""Shared views of timeline rows: which rows are device work, and which runtime call launched each.

Kernel ↔ runtime call is joined on ``correlation`` (DESIGN.md: join on ids, never pair
flows). Correlation ids are unique per process, so the join is made within one rank:
a track's rank is the part of its device before the last ``/`` (``rank3/cuda:0`` → ``rank3``).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ..model.timeline import LINKED, Category, Timeline

DEVICE_CATEGORIES = (Category.KERNEL, Category.MEMCPY, Category.MEMSET, Category.COMM)
KERNEL_CATEGORIES = (Category.KERNEL, Category.COMM)

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]


def rank_of(device: str) -> str:
    return device.rsplit("/", 1)[0] if "/" in device else ""


def in_categories(tl: Timeline, categories: tuple[Category, ...]) -> BoolArray:
    return np.isin(tl.category, np.asarray([int(c) for c in categories], dtype=np.int8))


def stream_track_mask(tl: Timeline) -> BoolArray:
    """Per row: is its track a device stream?"""
    is_stream = np.asarray([t.kind == "stream" for t in tl.tracks], dtype=bool)
    if is_stream.size == 0:
        return np.zeros(len(tl), dtype=bool)
    out: BoolArray = is_stream[tl.track]
    return out


def device_rows(tl: Timeline) -> BoolArray:
    """Rows that are device work (kernel, memcpy, memset, comm) on a stream."""
    return in_categories(tl, DEVICE_CATEGORIES) & stream_track_mask(tl)


def linked(tl: Timeline) -> BoolArray:
    out: BoolArray = (tl.flags & LINKED) != 0
    return out


def row_devices(tl: Timeline) -> npt.NDArray[np.int32]:
    """Per row: index into ``sorted(device names)`` of its track's device."""
    names = sorted({t.device for t in tl.tracks})
    index = {d: i for i, d in enumerate(names)}
    per_track = np.asarray([index[t.device] for t in tl.tracks], dtype=np.int32)
    if per_track.size == 0:
        return np.zeros(len(tl), dtype=np.int32)
    return per_track[tl.track]


def row_ranks(tl: Timeline) -> npt.NDArray[np.int32]:
    names = sorted({rank_of(t.device) for t in tl.tracks})
    index = {r: i for i, r in enumerate(names)}
    per_track = np.asarray([index[rank_of(t.device)] for t in tl.tracks], dtype=np.int32)
    if per_track.size == 0:
        return np.zeros(len(tl), dtype=np.int32)
    return per_track[tl.track]


def launching_call(tl: Timeline) -> IntArray:
    """Per row: the index of the RUNTIME row with the same correlation in the same rank, or -1.

    Only device rows get a value; everything else is -1.
    """
    out = np.full(len(tl), -1, dtype=np.int64)
    dev = device_rows(tl) & (tl.correlation >= 0)
    rt = (tl.category == int(Category.RUNTIME)) & (tl.correlation >= 0)
    if not dev.any() or not rt.any():
        return out
    ranks = row_ranks(tl)
    for rank in np.unique(ranks[dev]).tolist():
        rt_rows = np.flatnonzero(rt & (ranks == rank))
        if rt_rows.size == 0:
            continue
        order = np.argsort(tl.correlation[rt_rows], kind="stable")
        rt_rows = rt_rows[order]
        rt_corr = tl.correlation[rt_rows]
        dev_rows = np.flatnonzero(dev & (ranks == rank))
        corr = tl.correlation[dev_rows]
        pos = np.searchsorted(rt_corr, corr)
        pos_c = np.minimum(pos, rt_corr.size - 1)
        hit = rt_corr[pos_c] == corr
        out[dev_rows[hit]] = rt_rows[pos_c[hit]]
    return out
