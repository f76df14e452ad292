"""The normalised event records every collector and importer emits, and what kind each one is.

A record is one row of ``tables.HostTable`` or ``tables.DeviceTable``: typed integer columns (thread,
start, duration, kind, frame, External id, correlation, sequence number, forward thread, value) with
frames interned once. Kineto chrome traces (importers/kineto) and live torch runs
(collect/torch_events) both write these rows; ``engine`` is the one path from rows to a Profile.
"""

from __future__ import annotations

import enum
import re


class Kind(enum.IntEnum):
    """What an event becomes. Host kinds nest on their thread; device kinds sit on a stream."""

    STEP = 0  # ProfilerStep#N: hoisted to the top of the tree
    SCOPE = 1  # user_annotation / record_function
    REGION = 2  # torch.compile regions, compiled graphs
    PYTHON = 3  # a user python frame (value -1: running on from an earlier live window, no new call)
    MODULE = 4  # nn.Module: X_n (value as for PYTHON)
    # the context an op recorded with it (Kineto's `Call stack` arg; an ONNX node's modules and lines):
    # spans the op, sorts just before it; its label indexes ``EventTables.stacks``
    STACK = 5
    OP = 6  # cpu_op
    RUNTIME = 7  # cudaLaunchKernel, hipMemcpyAsync, ...
    SYNC = 8  # cudaStreamSynchronize, ...
    MEMORY = 9  # [memory] instant event (allocation)
    OVERHEAD = 10  # the profiler's own work inside a context: taken out of its self time, kept nowhere
    # device
    KERNEL = 11
    MEMCPY = 12
    MEMSET = 13
    COMM = 14
    # dropped
    SKIP = 20  # known and not needed (flows, overhead, framework python frames, ...)
    UNKNOWN = 21


HOST_KINDS = frozenset({Kind.STEP, Kind.SCOPE, Kind.REGION, Kind.PYTHON, Kind.MODULE, Kind.OP, Kind.RUNTIME, Kind.SYNC})
DEVICE_KINDS = frozenset({Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET, Kind.COMM})

SYNC_CALLS = frozenset(
    {
        "cudaStreamSynchronize",
        "cudaDeviceSynchronize",
        "cudaEventSynchronize",
        "cuStreamSynchronize",
        "cuCtxSynchronize",
        "cuEventSynchronize",
        "hipStreamSynchronize",
        "hipDeviceSynchronize",
        "hipEventSynchronize",
    }
)

_COMM = re.compile(
    r"nccl|rccl|allreduce|all_reduce|allgather|all_gather|reducescatter|reduce_scatter|sendrecv|alltoall", re.I
)
BACKWARD_PREFIX = "autograd::engine::evaluate_function: "
_STEP = re.compile(r"ProfilerStep#\d+$")
_REGION_PREFIXES = ("Torch-Compiled Region", "## Call CompiledFxGraph", "CompiledFunction", "## Call ")


def is_comm_kernel(name: str) -> bool:
    return _COMM.search(name) is not None


def host_kind(base: Kind, name: str) -> Kind:
    """Refine a host category by the event's name (steps, compiled regions, sync calls)."""
    if base in (Kind.SCOPE, Kind.OP):
        if _STEP.match(name):
            return Kind.STEP
        if name.startswith(_REGION_PREFIXES):
            return Kind.REGION
        return base
    if base is Kind.RUNTIME and name in SYNC_CALLS:
        return Kind.SYNC
    return base


TORCH_REGION = "Torch-Compiled Region"  # one torch.compile'd frame's call; ids: its frame/compile id "0/1"
GRAPH_CALL = "CompiledFxGraph"  # one compiled graph's call; ids: its cache key


def region_name(name: str) -> tuple[str, str]:
    """A region's name and ids: ``Torch-Compiled Region: 0/1`` -> (``Torch-Compiled Region``, ``0/1``),
    ``## Call CompiledFxGraph fp5r... ##`` -> (``CompiledFxGraph``, ``fp5r...``); others have no ids."""
    if name.startswith("## ") and name.endswith("##"):
        name = name[3:-2].strip().removeprefix("Call ").strip()
        head, _, key = name.partition(" ")
        if head == GRAPH_CALL:
            return head, key.strip()
        return name, ""
    head, sep, ids = name.partition(": ")
    if sep and head == TORCH_REGION:
        return head, ids.strip()
    return name, ""
