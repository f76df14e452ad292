"""Vectorised interval arithmetic on ``[start, end)`` arrays of nanoseconds.

Everything here is a sort plus a running maximum, so millions of intervals cost
milliseconds. Intervals may overlap, nest and come in any order; empty and
zero-length intervals contribute nothing.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]


def merge(starts: IntArray, ends: IntArray) -> tuple[IntArray, IntArray]:
    """The union of the intervals as disjoint, sorted ``(starts, ends)``; touching intervals join."""
    keep = ends > starts
    s, e = starts[keep], ends[keep]
    if s.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    order = np.argsort(s, kind="stable")
    s, e = s[order], e[order]
    reach = np.maximum.accumulate(e)
    # A merged interval begins wherever a start lies beyond everything before it.
    begins = np.ones(s.size, dtype=bool)
    begins[1:] = s[1:] > reach[:-1]
    first = np.flatnonzero(begins)
    last = np.append(first[1:] - 1, s.size - 1)
    return s[first].astype(np.int64), reach[last].astype(np.int64)


def union_length(starts: IntArray, ends: IntArray) -> int:
    """Total length covered by at least one interval."""
    ms, me = merge(starts, ends)
    return int((me - ms).sum())


def covered_at(merged_starts: IntArray, merged_ends: IntArray, t: IntArray) -> npt.NDArray[np.bool_]:
    """For each time in ``t``: does a merged interval cover it (``start <= t < end``)?"""
    i = np.searchsorted(merged_starts, t, side="right") - 1
    ok = i >= 0
    out = np.zeros(t.shape, dtype=bool)
    out[ok] = t[ok] < merged_ends[i[ok]]
    return out


def idle_after(merged_starts: IntArray, merged_ends: IntArray, t: IntArray) -> IntArray:
    """For each time in ``t``: how long from ``t`` until the next busy interval starts.

    0 when ``t`` lies inside a busy interval, before the first one (the device has not started:
    that is outside its timeline span) or after the last one (nothing follows).
    """
    out = np.zeros(t.shape, dtype=np.int64)
    if merged_starts.size == 0:
        return out
    busy = covered_at(merged_starts, merged_ends, t)
    nxt = np.searchsorted(merged_starts, t, side="right")
    has_next = (nxt > 0) & (nxt < merged_starts.size) & ~busy
    out[has_next] = merged_starts[nxt[has_next]] - t[has_next]
    return out
