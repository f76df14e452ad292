"""Versioned Arrow schemas of the store's tables (docs/store.md documents every column).

Bump ``SCHEMA_VERSION`` whenever a column is added, removed, renamed or changes meaning; readers
refuse a store whose version they do not know. The run history shares ``KEYED_SCHEMA``: one row per
(grouping, normalised key) with the summed metrics.
"""

from __future__ import annotations

import pyarrow as pa

SCHEMA_VERSION = 2

# The metric columns every keyed row carries (float64; absent metrics are 0).
METRICS = ("time_ns", "cpu_time_ns", "count", "flops", "bytes")

_METRIC_FIELDS = [pa.field(m, pa.float64(), nullable=False) for m in METRICS]

# keyed/rank=R/*.parquet and the run history: one row per structural key.
KEYED_SCHEMA = pa.schema(
    [
        pa.field("by", pa.string(), nullable=False),  # line | function | module | op | kernel
        pa.field("key", pa.string(), nullable=True),  # normalised key; null: time outside any such context
        *_METRIC_FIELDS,
    ]
)

# nodes/rank=R/*.parquet: the rank's calling-context tree, one row per node (node 0 is the root).
NODES_SCHEMA = pa.schema(
    [
        pa.field("node", pa.int32(), nullable=False),
        pa.field("parent", pa.int32(), nullable=False),
        pa.field("kind", pa.string(), nullable=False),
        pa.field("name", pa.string(), nullable=False),
        pa.field("file", pa.string(), nullable=False),
        pa.field("line", pa.int32(), nullable=False),
        pa.field("cls", pa.string(), nullable=False),
        pa.field("module", pa.string(), nullable=False),
        pa.field("device", pa.string(), nullable=False),
        pa.field("stream", pa.int32(), nullable=False),
        pa.field("ids", pa.string(), nullable=False),
        pa.field("line_key", pa.string(), nullable=True),  # innermost line context (keyed ``line`` key)
        pa.field("module_key", pa.string(), nullable=True),  # innermost module context (keyed ``module`` key)
        *_METRIC_FIELDS,
    ]
)

# timeline/rank=R/*.parquet: the rank's timeline, one row per interval, times on the rank's own clock.
TIMELINE_SCHEMA = pa.schema(
    [
        pa.field("node", pa.int32(), nullable=False),
        pa.field("device", pa.string(), nullable=False),  # the track's device (cuda:0, cpu)
        pa.field("track", pa.string(), nullable=False),  # "stream 7", "thread 1234"
        pa.field("track_kind", pa.string(), nullable=False),  # stream | thread
        pa.field("start_ns", pa.int64(), nullable=False),
        pa.field("dur_ns", pa.int64(), nullable=False),
        pa.field("category", pa.string(), nullable=False),  # kernel | memcpy | memset | comm | runtime | op | sync
        pa.field("flags", pa.uint8(), nullable=False),
        pa.field("correlation", pa.int64(), nullable=False),
    ]
)

# collectives/rank=R/*.parquet: one row per communication kernel, with what Kineto recorded about it.
COLLECTIVES_SCHEMA = pa.schema(
    [
        pa.field("name", pa.string(), nullable=False),  # collective name (allreduce, ...) or the normalised kernel
        pa.field("kernel", pa.string(), nullable=False),  # the kernel's name as recorded
        pa.field("pg", pa.string(), nullable=False),  # process group name, else the stream ("stream 7")
        pa.field("seq", pa.int64(), nullable=True),  # NCCL seq_num; null when Kineto did not record it
        pa.field("order", pa.int64(), nullable=False),  # position among this rank's collectives of the group
        pa.field("start_ns", pa.int64(), nullable=False),
        pa.field("dur_ns", pa.int64(), nullable=False),
        pa.field("device", pa.string(), nullable=False),
        pa.field("line_key", pa.string(), nullable=True),  # the user line that launched it
        pa.field("module_key", pa.string(), nullable=True),  # the module it ran under
        # of the time since this rank's previous collective ended, how long a live recorder paused the program
        # (opening, stopping and folding windows: recording.own_ns); 0 for imported traces
        pa.field("paused_ns", pa.int64(), nullable=False),
    ]
)

# devices/rank=R/*.parquet: the rank's per-device time breakdown (analysis.breakdown: interval unions).
DEVICES_SCHEMA = pa.schema(
    [
        pa.field("device", pa.string(), nullable=False),
        pa.field("total_ns", pa.int64(), nullable=False),  # first device event start to last end
        pa.field("busy_ns", pa.int64(), nullable=False),
        pa.field("computation_ns", pa.int64(), nullable=False),
        pa.field("total_comm_ns", pa.int64(), nullable=False),
        pa.field("exposed_comm_ns", pa.int64(), nullable=False),  # communication no computation overlapped
    ]
)

TABLES: dict[str, pa.Schema] = {
    "keyed": KEYED_SCHEMA,
    "nodes": NODES_SCHEMA,
    "timeline": TIMELINE_SCHEMA,
    "collectives": COLLECTIVES_SCHEMA,
    "devices": DEVICES_SCHEMA,
}

__all__ = [
    "COLLECTIVES_SCHEMA",
    "DEVICES_SCHEMA",
    "KEYED_SCHEMA",
    "METRICS",
    "NODES_SCHEMA",
    "SCHEMA_VERSION",
    "TABLES",
    "TIMELINE_SCHEMA",
]
