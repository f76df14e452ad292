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
    return pa.Table.from_pydict(out, schema=COLLECTIVES_SCHEMA)


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
