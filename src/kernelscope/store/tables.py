"""A rank's profile as the store's Arrow tables (``schema.TABLES``): pure functions, nothing written."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from ..analysis.breakdown import breakdown
from ..analysis.diff.normalize import normal_kernel
from ..analysis.rows import device_rows
from ..model import Profile
from ..model.timeline import Category, Timeline
from .keys import keyed_table, node_keys
from .schema import COLLECTIVES_SCHEMA, DEVICES_SCHEMA, METRICS, NODES_SCHEMA, TIMELINE_SCHEMA

_CATEGORY_NAMES = [c.name.lower() for c in sorted(Category)]


def nodes_table(profile: Profile) -> pa.Table:
    frames = [profile.frames[i] for i in profile.frame.tolist()]
    cols: dict[str, Any] = {
        "node": pa.array(np.arange(len(profile), dtype=np.int32)),
        "parent": pa.array(profile.parent.astype(np.int32)),
        "kind": [f.kind.value for f in frames],
        "name": [f.name for f in frames],
        "file": [f.file for f in frames],
        "line": pa.array([f.line for f in frames], pa.int32()),
        "cls": [f.cls for f in frames],
        "module": [f.module for f in frames],
        "device": [f.device for f in frames],
        "stream": pa.array([f.stream for f in frames], pa.int32()),
        "ids": [f.ids for f in frames],
        "line_key": node_keys(profile, "line"),
        "module_key": node_keys(profile, "module"),
    }
    for m in METRICS:
        cols[m] = pa.array(profile.exclusive(m), pa.float64())
    return pa.Table.from_pydict(cols, schema=NODES_SCHEMA)


def timeline_table(timeline: Timeline | None) -> pa.Table:
    if timeline is None or len(timeline) == 0:
        return TIMELINE_SCHEMA.empty_table()
    tracks = timeline.tracks
    track_col = pa.array(timeline.track)
    names = pa.DictionaryArray.from_arrays(track_col, pa.array([t.name for t in tracks])).cast(pa.string())
    devices = pa.DictionaryArray.from_arrays(track_col, pa.array([t.device for t in tracks])).cast(pa.string())
    kinds = pa.DictionaryArray.from_arrays(track_col, pa.array([t.kind for t in tracks])).cast(pa.string())
    cat_idx = pa.array(timeline.category.astype(np.int32))
    cats = pa.DictionaryArray.from_arrays(cat_idx, pa.array(_CATEGORY_NAMES)).cast(pa.string())
    arrays = [
        pa.array(timeline.node),
        devices,
        names,
        kinds,
        pa.array(timeline.start_ns),
        pa.array(timeline.dur_ns),
        cats,
        pa.array(timeline.flags),
        pa.array(timeline.correlation),
    ]
    return pa.Table.from_arrays(arrays, schema=TIMELINE_SCHEMA)


def collectives_table(profile: Profile) -> pa.Table:
    """The rank's communication kernels in start order, each with its group and its position in it."""
    tl = profile.timeline
    if tl is None or len(tl) == 0:
        return COLLECTIVES_SCHEMA.empty_table()
    rows = np.flatnonzero(device_rows(tl) & (tl.category == int(Category.COMM)))
    rows = rows[np.argsort(tl.start_ns[rows], kind="stable")]
    recorded = {int(r[0]): r[1:] for r in (profile.metadata.get("collectives") or {}).get("rows", [])}
    paused = _paused_before(tl.start_ns[rows], tl.start_ns[rows] + tl.dur_ns[rows], _own_pauses(profile))
    line_keys = node_keys(profile, "line")
    module_keys = node_keys(profile, "module")
    order: dict[str, int] = {}
    out: dict[str, list[Any]] = {f.name: [] for f in COLLECTIVES_SCHEMA}
    for r in rows.tolist():
        node = int(tl.node[r])
        kernel = profile.frame_of(node).name
        track = tl.tracks[int(tl.track[r])]
        info = recorded.get(int(tl.correlation[r]))
        name, pg, seq = (str(info[0]), str(info[1]), int(info[2])) if info else (normal_kernel(kernel), "", -1)
        group = pg or track.name  # no group recorded: the stream (one NCCL communicator each)
        out["name"].append(name)
        out["kernel"].append(kernel)
        out["pg"].append(group)
        out["seq"].append(seq if seq >= 0 else None)
        out["order"].append(order.setdefault(group, 0))
        order[group] += 1
        out["start_ns"].append(int(tl.start_ns[r]))
        out["dur_ns"].append(int(tl.dur_ns[r]))
        out["device"].append(track.device)
        out["line_key"].append(line_keys[node])
        out["module_key"].append(module_keys[node])
    out["paused_ns"] = paused.tolist()
    return pa.Table.from_pydict(out, schema=COLLECTIVES_SCHEMA)


def _own_pauses(profile: Profile) -> np.ndarray:
    """When a live run's recorder held the program (opening, stopping, folding windows): (n, 2) epoch ns in
    start order, disjoint ([] for imports)."""
    raw = (profile.metadata.get("recording") or {}).get("own_ns") or []
    try:
        gaps = np.asarray(raw, dtype=np.int64).reshape(-1, 2)
    except (TypeError, ValueError):  # (metadata from elsewhere: no gaps rather than a failure)
        return np.zeros((0, 2), dtype=np.int64)
    return gaps[np.argsort(gaps[:, 0], kind="stable")]


def _paused_before(starts: np.ndarray, ends: np.ndarray, gaps: np.ndarray) -> np.ndarray:
    """Per collective (in start order): the paused time (``gaps``, disjoint) between the previous collective's
    end (any group) and its start. A rank held there to fold arrives late by that much of kernelscope's doing."""
    if gaps.size == 0 or starts.size == 0:
        return np.zeros(starts.size, dtype=np.int64)
    lo, hi = gaps[:, 0], np.maximum(gaps[:, 1], gaps[:, 0])
    before = np.concatenate([[0], np.cumsum(hi - lo)])  # gap time before each gap begins (gaps are disjoint)

    def paused_until(t: np.ndarray) -> np.ndarray:
        k = np.searchsorted(lo, t, side="right")  # gaps begun by t
        last = np.maximum(k - 1, 0)
        inside = np.where(k > 0, np.clip(t - lo[last], 0, hi[last] - lo[last]), 0)
        return np.asarray(before[last] * (k > 0) + inside, dtype=np.int64)

    since = np.concatenate([[starts[0]], np.maximum.accumulate(ends)[:-1]])
    since = np.minimum(since, starts)
    first = paused_until(np.asarray([starts[0]]))  # (before the first collective: since the run began)
    out: np.ndarray = paused_until(starts) - paused_until(since)
    out[0] = first[0]
    return out


def devices_table(profile: Profile) -> pa.Table:
    devs = breakdown(profile).devices
    return pa.Table.from_pydict(
        {
            "device": [d.device for d in devs],
            "total_ns": [d.total_ns for d in devs],
            "busy_ns": [d.busy_ns for d in devs],
            "computation_ns": [d.computation_ns for d in devs],
            "total_comm_ns": [d.total_comm_ns for d in devs],
            "exposed_comm_ns": [d.exposed_comm_ns for d in devs],
        },
        schema=DEVICES_SCHEMA,
    )


def rank_tables(profile: Profile) -> dict[str, pa.Table]:
    """Every store table of one rank's profile (``schema.TABLES`` names)."""
    return {
        "keyed": keyed_table(profile),
        "nodes": nodes_table(profile),
        "timeline": timeline_table(profile.timeline),
        "collectives": collectives_table(profile),
        "devices": devices_table(profile),
    }


__all__ = ["collectives_table", "devices_table", "nodes_table", "rank_tables", "timeline_table"]
