"""Typed Kineto events: the fields we read, and what kind of event each one is.

Every field is decoded as ``Any`` on purpose: real traces carry strings where numbers should
be, ``null`` ids, string pids ("Spans"). Types are checked where a value is used, and a value
of the wrong type is counted as a warning, never an exception.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import msgspec

from ...attribute.records import Kind


class RawArgs(msgspec.Struct, frozen=True):
    external_id: Any = msgspec.field(name="External id", default=None)
    correlation: Any = None
    seq: Any = msgspec.field(name="Sequence number", default=None)
    fwd_tid: Any = msgspec.field(name="Fwd thread id", default=None)
    device: Any = None
    stream: Any = None
    # shapes are decoded only for ops with a FLOP rule: kept raw (a slice of the input) until then
    input_dims: Any = msgspec.field(name="Input Dims", default=None)
    concrete: Any = msgspec.field(name="Concrete Inputs", default=None)
    input_type: Any = msgspec.field(name="Input type", default=None)
    nbytes: Any = msgspec.field(name="Bytes", default=None)
    kernel_file: Any = None
    collective: Any = msgspec.field(name="Collective name", default=None)
    # the Python stack of an op (2021-era traces, and newer ones with a verbose experimental config)
    call_stack: Any = msgspec.field(name="Call stack", default=None)
    # a kernel replayed by a CUDA/HIP graph (CUPTI's graphId/graphNodeId)
    graph_id: Any = msgspec.field(name="graph id", default=None)
    graph_node_id: Any = msgspec.field(name="graph node id", default=None)
    graph_id_camel: Any = msgspec.field(name="graphId", default=None)
    graph_node_id_camel: Any = msgspec.field(name="graphNodeId", default=None)
    pg_name: Any = msgspec.field(name="Process Group Name", default=None)
    comm_seq: Any = msgspec.field(name="Seq", default=None)  # NCCL seq_num (newer PyTorch)
    # kernelscope's own export: 0 on a user line or module that made no call of its own in the profile
    calls: Any = msgspec.field(name="Calls", default=None)


NO_RAW = msgspec.Raw(b"")


class FastArgs(RawArgs, frozen=True):
    """The decoder's view: shapes stay raw JSON (``msgspec.Raw``), decoded only when FLOPs need them."""

    input_dims: msgspec.Raw = msgspec.field(name="Input Dims", default=NO_RAW)
    concrete: msgspec.Raw = msgspec.field(name="Concrete Inputs", default=NO_RAW)
    input_type: msgspec.Raw = msgspec.field(name="Input type", default=NO_RAW)


class RawEvent(msgspec.Struct, frozen=True):
    ph: Any = None
    cat: Any = None
    name: Any = None
    pid: Any = None
    tid: Any = None
    ts: Any = None
    dur: Any = None
    id: Any = None
    args: RawArgs | None = None


class FastEvent(RawEvent, frozen=True):
    args: FastArgs | None = None


_ARG_FIELDS = {f.encode_name: f.name for f in msgspec.structs.fields(RawArgs)}
_EVENT_FIELDS = ("ph", "cat", "name", "pid", "tid", "ts", "dur", "id")


def event_from_dict(item: Any, warnings: Counter[str]) -> RawEvent | None:
    """The tolerant twin of the typed decoder, for batches the fast path rejected."""
    if not isinstance(item, dict):
        warnings["non-object entries in traceEvents"] += 1
        return None
    fields = {k: item.get(k) for k in _EVENT_FIELDS}
    raw_args = item.get("args")
    args: RawArgs | None = None
    if isinstance(raw_args, dict):
        args = RawArgs(**{attr: raw_args.get(key) for key, attr in _ARG_FIELDS.items()})
    elif raw_args is not None:
        warnings["events with non-object args"] += 1
    return RawEvent(**fields, args=args)


# Category names across vintages (lower-cased). 2021 traces say Operator/Runtime/Kernel/Memcpy/Memset.
CATEGORIES: dict[str, Kind] = {
    "cpu_op": Kind.OP,
    "operator": Kind.OP,
    "user_annotation": Kind.SCOPE,
    "python_function": Kind.PYTHON,
    "cuda_runtime": Kind.RUNTIME,
    "cuda_driver": Kind.RUNTIME,
    "runtime": Kind.RUNTIME,
    "driver": Kind.RUNTIME,
    "hip_runtime": Kind.RUNTIME,
    "hip_driver": Kind.RUNTIME,
    "kernel": Kind.KERNEL,
    "gpu_memcpy": Kind.MEMCPY,
    "memcpy": Kind.MEMCPY,
    "gpu_memset": Kind.MEMSET,
    "memset": Kind.MEMSET,
    "cpu_instant_event": Kind.MEMORY,
    # known, not needed
    "ac2g": Kind.SKIP,
    "fwdbwd": Kind.SKIP,
    "trace": Kind.SKIP,
    "overhead": Kind.SKIP,
    "gpu_user_annotation": Kind.SKIP,
    "cuda_sync": Kind.SKIP,
    "cuda_profiler_range": Kind.SKIP,
    "python_function_call": Kind.SKIP,
}


__all__ = ["CATEGORIES", "FastEvent", "Kind", "RawArgs", "RawEvent", "event_from_dict"]
