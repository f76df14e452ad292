"""Read an XSpace (``*.xplane.pb``) into plain typed records: XLA op executions, runtime calls, HLO protos.

- ``/host:metadata``: one event per executable, ``Hlo Proto`` (bytes) and ``program_id`` stats.
- ``/device:GPU:N`` (and TPU, ...): one line per stream; events are kernels, memsets and memcpys with
  ``hlo_op``/``hlo_module``/``program_id`` and ``correlation_id`` stats.
- ``/host:CPU``: one line per thread; runtime calls (``cudaLaunchKernel``, ``hipMemsetAsync``) carry
  ``correlation_id``; on XLA:CPU the ops themselves are host events with ``hlo_op``.

Times: a line's ``timestamp_ns`` plus an event's ``offset_ps``; durations in picoseconds.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ...model.timeline import Category

# Lines that XProf derives from the raw ones (present in some saved XPlanes): never raw events.
_DERIVED_LINES = frozenset(
    {"XLA Modules", "XLA Ops", "XLA TraceMe", "Steps", "Framework Name Scope", "Framework Ops", "Source code"}
)
_COMM = re.compile(
    r"nccl|rccl|allreduce|all_reduce|allgather|all_gather|reducescatter|reduce_scatter|sendrecv|alltoall|all-reduce"
    r"|all-gather|reduce-scatter|collective-permute|all-to-all",
    re.I,
)
_KEYS = ("hlo_op", "hlo_module", "program_id", "correlation_id", "memcpy_details", "memset_details", "run_id")


@dataclass(frozen=True, slots=True)
class OpEvent:
    """One execution of an HLO instruction: a device kernel/memcpy/memset, or a thunk on a host thread."""

    hlo_op: str  # "" when the event names no instruction
    module: str
    program_id: int  # -1 when unknown
    name: str  # the kernel's name (device) or the event's name (host)
    device: str  # "gpu:0", "cpu"
    track: str  # "Stream #2", a thread's name
    on_device: bool
    start_ns: int
    dur_ps: int
    self_ps: int  # duration minus nested op events on the same track
    category: Category
    correlation: int  # -1 when none
    linked: bool  # a device event whose launching runtime call is in the trace
    run_id: int | None = None  # the execution of the executable it belongs to (XLA:CPU; may be negative)


@dataclass(frozen=True, slots=True)
class RuntimeCall:
    name: str
    track: str
    start_ns: int
    dur_ps: int
    correlation: int


@dataclass
class XSpaceRecords:
    ops: list[OpEvent] = field(default_factory=list)
    runtime: list[RuntimeCall] = field(default_factory=list)
    hlo_protos: dict[int, bytes] = field(default_factory=dict)  # program id -> serialized HloProto
    module_names: dict[int, str] = field(default_factory=dict)  # program id -> "jit_train_step"
    devices: list[dict[str, Any]] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    warnings: Counter[str] = field(default_factory=Counter)

    @property
    def has_device_events(self) -> bool:
        return any(op.on_device for op in self.ops)


def device_name(plane_name: str) -> str | None:
    """``/device:GPU:0`` -> ``gpu:0``; ``/host:CPU`` -> ``cpu``; other planes -> None."""
    if plane_name.startswith("/device:"):
        kind = plane_name[len("/device:") :]
        if kind.startswith("CUSTOM"):
            return None
        return kind.lower()
    if plane_name == "/host:CPU":
        return "cpu"
    return None


def read_space(space: Any) -> XSpaceRecords:
    rec = XSpaceRecords()
    rec.metadata["hostnames"] = list(space.hostnames)
    runtime: dict[int, dict[str, Any]] = {}
    device_planes = []
    for plane in space.planes:
        if plane.name == "/host:metadata":
            _read_metadata_plane(plane, rec)
        elif plane.name == "/host:CPU":
            _read_host_plane(plane, rec, runtime)
        elif plane.name == "Task Environment":
            rec.metadata.update({k: v for k, v in _plane_stats(plane).items() if isinstance(v, int | float | str)})
        elif device_name(plane.name) is not None:
            device_planes.append(plane)
    for plane in device_planes:
        _read_device_plane(plane, rec, runtime)
    return rec


def _stat_names(plane: Any) -> dict[int, str]:
    return {k: v.name for k, v in plane.stat_metadata.items()}


def _value(stat: Any, names: dict[int, str]) -> Any:
    kind = stat.WhichOneof("value")
    if kind is None:
        return None
    if kind == "ref_value":
        return names.get(stat.ref_value, "")
    return getattr(stat, kind)


def _plane_stats(plane: Any) -> dict[str, Any]:
    names = _stat_names(plane)
    return {names.get(s.metadata_id, ""): _value(s, names) for s in plane.stats}


def _read_metadata_plane(plane: Any, rec: XSpaceRecords) -> None:
    names = _stat_names(plane)
    for key, value in _plane_stats(plane).items():
        if key in ("jax_version", "jaxlib_version", "cpu_version", "process_id"):
            rec.metadata[key] = value
    for key, meta in plane.event_metadata.items():
        stats = {names.get(s.metadata_id, ""): s for s in meta.stats}
        proto = stats.get("Hlo Proto")
        if proto is None:
            continue
        pid_stat = stats.get("program_id")
        program_id = int(_value(pid_stat, names) or 0) if pid_stat is not None else 0
        if not program_id:
            m = re.search(r"\((\d+)\)$", meta.name)
            program_id = int(m.group(1)) if m else int(key)
        rec.hlo_protos[program_id] = bytes(proto.bytes_value)
        rec.module_names[program_id] = meta.name.rsplit("(", 1)[0] if meta.name.endswith(")") else meta.name


def _event_stats(event: Any, meta: Any, wanted: dict[int, str], names: dict[int, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for stats in (meta.stats, event.stats):
        for s in stats:
            key = wanted.get(s.metadata_id)
            if key is not None:
                out[key] = _value(s, names)
    return out


def _wanted(names: dict[int, str]) -> dict[int, str]:
    return {i: n for i, n in names.items() if n in _KEYS}


def _read_host_plane(plane: Any, rec: XSpaceRecords, runtime: dict[int, dict[str, Any]]) -> None:
    names = _stat_names(plane)
    wanted = _wanted(names)
    metas = plane.event_metadata
    bare = {k for k, m in metas.items() if not m.stats}
    for line in plane.lines:
        track = line.display_name or line.name or f"thread {line.id}"
        ops: list[tuple[int, int, str, dict[str, Any]]] = []  # start_ps, dur_ps, name, stats
        base_ps = int(line.timestamp_ns) * 1000
        for event in line.events:
            if not event.stats and event.metadata_id in bare:
                continue  # Python tracer and TraceMe events without stats: most of a CPU trace
            meta = metas.get(event.metadata_id)
            if meta is None:
                continue
            stats = _event_stats(event, meta, wanted, names)
            if not stats:
                continue
            start_ps = base_ps + int(event.offset_ps)
            corr = stats.get("correlation_id")
            if corr is not None:
                rec.runtime.append(RuntimeCall(meta.name, track, start_ps // 1000, int(event.duration_ps), int(corr)))
                runtime[int(corr)] = {**stats, "name": meta.name}
            elif stats.get("hlo_op"):
                ops.append((start_ps, int(event.duration_ps), meta.name, stats))
        for (start_ps, dur_ps, name, stats), self_ps in zip(ops, _self_times(ops), strict=True):
            rec.ops.append(
                OpEvent(
                    hlo_op=str(stats.get("hlo_op") or ""),
                    module=str(stats.get("hlo_module") or ""),
                    program_id=_int(stats.get("program_id")),
                    name=name,
                    device="cpu",
                    track=track,
                    on_device=False,
                    start_ns=start_ps // 1000,
                    dur_ps=dur_ps,
                    self_ps=self_ps,
                    category=Category.OP,
                    correlation=-1,
                    linked=True,  # executed by the runtime inside the trace
                    run_id=None if stats.get("run_id") is None else _int(stats.get("run_id")),
                )
            )


def _self_times(ops: list[tuple[int, int, str, dict[str, Any]]]) -> list[int]:
    """Each op's duration minus the ops nested in it (a while loop's body runs inside the while)."""
    order = sorted(range(len(ops)), key=lambda i: (ops[i][0], -ops[i][1]))
    self_ps = [d for _s, d, _n, _st in ops]
    stack: list[int] = []
    for i in order:
        start, dur = ops[i][0], ops[i][1]
        while stack and ops[stack[-1]][0] + ops[stack[-1]][1] <= start:
            stack.pop()
        if stack:
            parent = stack[-1]
            self_ps[parent] -= min(dur, ops[parent][0] + ops[parent][1] - start)
        stack.append(i)
    return [max(s, 0) for s in self_ps]


def _read_device_plane(plane: Any, rec: XSpaceRecords, runtime: dict[int, dict[str, Any]]) -> None:
    device = device_name(plane.name) or plane.name
    props = {k: v for k, v in _plane_stats(plane).items() if isinstance(v, int | float | str)}
    has_events = any(len(line.events) for line in plane.lines)
    if props or has_events:
        rec.devices.append({"device": device, "plane": plane.name, **props})
    names = _stat_names(plane)
    wanted = _wanted(names)
    metas = plane.event_metadata
    lines = [line for line in plane.lines if line.name not in _DERIVED_LINES and len(line.events)]
    if not lines:  # TPUs record their ops on an "XLA Ops" line; GPUs on streams (XProf derives "XLA Ops")
        lines = [line for line in plane.lines if line.name == "XLA Ops"]
    for line in lines:
        track = line.display_name or line.name or f"stream {line.id}"
        base_ps = int(line.timestamp_ns) * 1000
        for event in line.events:
            meta = metas.get(event.metadata_id)
            if meta is None:
                continue
            stats = _event_stats(event, meta, wanted, names)
            corr = _int(stats.get("correlation_id"))
            launch = runtime.get(corr) if corr >= 0 else None
            if launch is not None:  # the launching call names the instruction when the kernel does not
                stats = {**launch, **stats}
            launched_by = str(launch["name"]) if launch is not None else ""
            dur = int(event.duration_ps)
            rec.ops.append(
                OpEvent(
                    hlo_op=str(stats.get("hlo_op") or ""),
                    module=str(stats.get("hlo_module") or ""),
                    program_id=_int(stats.get("program_id")),
                    name=meta.display_name or meta.name,
                    device=device,
                    track=track,
                    on_device=True,
                    start_ns=(base_ps + int(event.offset_ps)) // 1000,
                    dur_ps=dur,
                    self_ps=dur,
                    category=_category(meta.name, launched_by, stats),
                    correlation=corr,
                    linked=launch is not None,
                )
            )


def _category(name: str, runtime: str, stats: dict[str, Any]) -> Category:
    low_rt = runtime.lower()
    if "memset_details" in stats or "memset" in low_rt:
        return Category.MEMSET
    if "memcpy_details" in stats or "memcpy" in low_rt:
        return Category.MEMCPY
    if _is_comm(name) or _is_comm(str(stats.get("hlo_op") or "")):
        return Category.COMM
    return Category.KERNEL


@lru_cache(maxsize=65536)
def _is_comm(name: str) -> bool:
    return _COMM.search(name) is not None


def _int(value: Any) -> int:
    try:
        return int(value) if value is not None else -1
    except (TypeError, ValueError):
        return -1


__all__ = ["OpEvent", "RuntimeCall", "XSpaceRecords", "device_name", "read_space"]
