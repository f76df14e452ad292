"""From XSpace records to a Profile: join each op execution to its HLO instruction, place it, add the timeline.

On a GPU XPlane the device events are the kernels (``time_ns``); the runtime calls that launched them
(``cudaLaunchKernel``, ``hipMemsetAsync``, joined by correlation id) and host-side events of the same
instructions add ``cpu_time_ns`` at the op. On XLA:CPU the host op events are the kernels: their self time
is ``time_ns``, and their rows form the ``cpu`` device's timeline.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ...model import Frame, Profile, ProfileBuilder, TimelineBuilder
from ...model.profile import prune_empty
from ...model.timeline import LINKED, Category
from .boundaries import Boundary, find_boundaries
from .callsites import Stack, sites_of_runs
from .hlo import HloModule, HloOp
from .place import Placement, Placer, place, user_frames
from .reader import OpEvent, XSpaceRecords


def build_profile(
    records: XSpaceRecords,
    modules: dict[int, HloModule],
    metadata: dict[str, Any],
    call_sites: Mapping[str, Sequence[Stack]] | None = None,
) -> Profile:
    """``call_sites``: a live run's recorded callers of each jitted function (``collect.jax_calls``)."""
    builder = ProfileBuilder()
    placer = Placer(builder)
    timeline = TimelineBuilder()
    warnings: Counter[str] = Counter(records.warnings)
    on_device = records.has_device_events
    placements: dict[tuple[int, str, str, str, str, int, int], Placement] = {}
    kernel_nodes: dict[tuple[int, str, str, str, str, int, int], int] = {}
    site_of_run = sites_of_runs(records.ops, modules, call_sites, warnings) if call_sites else {}
    site_ids: dict[tuple[Frame, ...], int] = {}
    conversions: dict[tuple[int, str, str, str, str, int, int], tuple[tuple[str, int, str, str], ...]] = {}
    casts: Counter[tuple[str, int, str, str]] = Counter()  # (file, line, from, to) -> executions
    kernel_of_corr: dict[int, int] = {}
    tracks: dict[tuple[str, str], int] = {}

    def site_id(ev: OpEvent) -> tuple[int, tuple[Frame, ...] | None]:
        site = site_of_run.get((ev.program_id, ev.run_id)) if site_of_run and ev.run_id is not None else None
        if site is None:
            return -1, None
        return site_ids.setdefault(site, len(site_ids)), site

    def kernel_key(ev: OpEvent, kernel: Frame, site: int) -> tuple[int, str, str, str, str, int, int]:
        return (ev.program_id, ev.module, ev.hlo_op, kernel.name, kernel.device, kernel.stream, site)

    def placement_of(ev: OpEvent, kernel: Frame) -> Placement:
        site, caller = site_id(ev)
        key = kernel_key(ev, kernel, site)
        hit = placements.get(key)
        if hit is None:
            module = modules.get(ev.program_id)
            op = module.op(ev.hlo_op) if module is not None and ev.hlo_op else None
            if ev.hlo_op and op is None:
                warnings["XLA op events whose instruction is not in the metadata plane's HLO"] += 1
            hit = placements[key] = place(op, kernel, module, ev.module or (module.name if module else ""), caller)
            conversions[key] = conversions_of(op)
        return hit

    boundaries = {pid: found for pid, m in modules.items() if (found := find_boundaries(m))}
    in_boundary = {(pid, k) for pid, found in boundaries.items() for b in found for k in (b.producer, b.consumer)}
    kernel_time: dict[tuple[int, str], list[float]] = {}  # (program, instruction) -> [executions, ns]

    for ev in records.ops:
        if (ev.on_device or not on_device) and (ev.program_id, ev.hlo_op) in in_boundary:
            acc = kernel_time.setdefault((ev.program_id, ev.hlo_op), [0.0, 0.0])
            acc[0] += 1
            acc[1] += ev.self_ps / 1000
        if on_device and not ev.on_device:  # host side of a GPU instruction: launch work on the CPU
            p = placement_of(ev, Frame.kernel(ev.hlo_op or ev.name, "cpu"))
            node = builder.path(p.op)
            builder.add(node, "cpu_time_ns", ev.self_ps / 1000)
            track = timeline.track(ev.track, "cpu", "thread")
            timeline.add(node, track, ev.start_ns, ev.dur_ps // 1000, Category.OP)
            continue
        stream = -1
        if ev.on_device:
            kernel = Frame.kernel(ev.name, ev.device, _stream_id(ev.track))
            stream = kernel.stream
        else:
            kernel = Frame.kernel(ev.hlo_op or ev.name, ev.device)
        key = kernel_key(ev, kernel, site_id(ev)[0])
        node = kernel_nodes.get(key, -1)
        if node < 0:
            node = kernel_nodes[key] = placer.kernel_node(placement_of(ev, kernel))
        placer.add_kernel(node, "time_ns", ev.self_ps / 1000)
        placer.add_kernel(node, "count", 1.0)
        for where in conversions.get(key, ()):
            casts[where] += 1
        category = ev.category if ev.on_device else Category.KERNEL
        track = tracks.get((ev.track, ev.device), -1)
        if track < 0:
            name = f"stream {stream}" if ev.on_device and stream >= 0 else ev.track
            track = tracks[(ev.track, ev.device)] = timeline.track(name, ev.device, "stream")
        timeline.add(node, track, ev.start_ns, ev.dur_ps // 1000, category, LINKED if ev.linked else 0, ev.correlation)
        if ev.correlation >= 0:
            kernel_of_corr[ev.correlation] = node
    placer.finish()
    for call in records.runtime:
        track = timeline.track(call.track, "cpu", "thread")
        node = kernel_of_corr.get(call.correlation, 0)
        if node:
            node = builder.parent_of(node)  # the op that launched it, not the kernel
            builder.add(node, "cpu_time_ns", call.dur_ps / 1000)  # host time spent launching its kernels
        timeline.add(node, track, call.start_ns, call.dur_ps // 1000, Category.RUNTIME, 0, call.correlation)
    if not on_device and not records.ops:
        warnings["the XPlane holds no XLA op executions"] += 1
    builder.ensure_metric("time_ns")
    builder.ensure_metric("count")
    meta = dict(metadata)
    meta["device_run"] = on_device
    if casts:  # dtype conversions by line, for the advisor's dtype_round_trip
        meta["casts"] = [
            {"file": f, "line": line, "from": a, "to": b, "calls": n} for (f, line, a, b), n in sorted(casts.items())
        ]
    rows = boundary_rows(modules, boundaries, kernel_time)
    if rows:  # elementwise kernels XLA left apart, for the advisor's xla_fusion_boundary
        meta["fusion_boundaries"] = rows
    if warnings:
        meta["import_warnings"] = dict(sorted(warnings.items()))
    starts = [ev.start_ns for ev in records.ops]
    if starts:
        meta["trace_start_ns"] = min(starts)
    return prune_empty(builder.build(meta, timeline.build() if len(timeline) else None))


def boundary_rows(
    modules: dict[int, HloModule], found: dict[int, list[Boundary]], kernel_time: dict[tuple[int, str], list[float]]
) -> list[dict[str, Any]]:
    """Boundaries whose two kernels ran, with their executions and measured times."""
    out: list[dict[str, Any]] = []
    for pid, boundaries in sorted(found.items()):
        for b in boundaries:
            p, c = kernel_time.get((pid, b.producer)), kernel_time.get((pid, b.consumer))
            if p is None or c is None or b.where is None:
                continue
            out.append(
                {
                    "file": b.where.file,
                    "line": b.where.line,
                    "function": modules[pid].name,
                    "producer": b.producer,
                    "consumer": b.consumer,
                    "between": b.between,
                    "executions": int(min(p[0], c[0])),
                    "producer_ns": p[1],
                    "consumer_ns": c[1],
                }
            )
    return out


def conversions_of(op: HloOp | None) -> tuple[tuple[str, int, str, str], ...]:
    """The dtype conversions an instruction executes: (file, line, from, to) of each ``convert`` it holds."""
    if op is None:
        return ()
    out = []
    for o in op.fused or ((op.own,) if op.own is not None else ()):
        if o.dtypes is None:
            continue
        users = user_frames(o.stack)
        if users:
            out.append((users[-1].file, users[-1].line, *o.dtypes))
    return tuple(out)


def _stream_id(track: str) -> int:
    """``Stream #2`` -> 2; other names -> -1."""
    digits = track.rsplit("#", 1)[-1].strip() if "#" in track else ""
    return int(digits) if digits.isdigit() else -1


__all__ = ["build_profile"]
