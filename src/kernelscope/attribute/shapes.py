"""Per-call costs for calls made after a sampling window (live runs, ``--shapes sample``, ``--memory sample``).

Input shapes (for FLOPs and bytes) and allocation events are recorded over a sample at the start of recording
(collect/sampling.py: the first second, or a program's first whole steps); a context's later calls get the per-call
values its sampled calls had.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..model import ProfileBuilder

SHAPE_METRICS = ("flops", "bytes")
MEMORY_METRICS = ("alloc_bytes",)
SAMPLE_NOTES = {
    "flops": "input shapes recorded in a sample at the start of recording (shapes.recorded_seconds); FLOPs and "
    "bytes of later calls are the same context's per-call values (exact when shapes do not change)",
    "alloc_bytes": "allocations recorded in a sample at the start of recording; alloc_bytes of later calls "
    "are the same context's per-call values (exact when each call allocates the same)",
}


def snapshot(builder: ProfileBuilder, metrics: Sequence[str]) -> dict[str, dict[int, float]]:
    """The ``count`` column and ``metrics`` as they are now (when the sampling window closes)."""
    return {m: dict(builder.metric_values(m)) for m in ("count", *metrics)}


def extrapolate(builder: ProfileBuilder, sampled: dict[str, dict[int, float]], metrics: Sequence[str]) -> float:
    """Give each context's calls made since ``sampled`` (a :func:`snapshot`) the per-call ``metrics``
    its sampled calls had, less what they got without shapes (a compiled kernel's FLOPs come from its graph,
    recorded shapes or not); return how many calls were filled in."""
    counts_now = builder.metric_values("count")
    sampled_counts = sampled.get("count", {})
    filled = 0.0
    for i, metric in enumerate(metrics):
        values_now = builder.metric_values(metric)
        for node, value in sampled.get(metric, {}).items():
            calls = sampled_counts.get(node, 0.0)
            extra = counts_now.get(node, 0.0) - calls
            if calls > 0 and extra > 0:
                missing = value / calls * extra - (values_now.get(node, 0.0) - value)
                if missing > 0:
                    builder.add(node, metric, missing)
                    if i == 0:
                        filled += extra
    return filled


def extrapolate_costs(builder: ProfileBuilder, shaped: dict[str, dict[int, float]], seconds: float) -> dict[str, Any]:
    """FLOPs and bytes of the calls after the shape-recording window; the metadata that says so."""
    return {
        "mode": "sample",
        "recorded_seconds": seconds,
        "note": SAMPLE_NOTES["flops"],
        "extrapolated_calls": extrapolate(builder, shaped, SHAPE_METRICS),
    }


def extrapolate_allocations(
    builder: ProfileBuilder, sampled: dict[str, dict[int, float]], seconds: float
) -> dict[str, Any]:
    """``alloc_bytes`` of the calls after the memory-recording window; the metadata that says so."""
    return {
        "mode": "sample",
        "recorded_seconds": seconds,
        "note": SAMPLE_NOTES["alloc_bytes"],
        "extrapolated_calls": extrapolate(builder, sampled, MEMORY_METRICS),
    }


def extrapolate_sampled(
    builder: ProfileBuilder,
    sampled: dict[str, dict[int, float]],
    shapes: str,
    memory: str,
    seconds: float,
    allocations: dict[str, dict[int, float]] | None = None,
) -> dict[str, Any]:
    """The ``shapes`` and ``memory`` metadata of a live run, filling in what its sampling windows left out.
    ``allocations``: the snapshot when allocation sampling ended, where it ended apart from shapes'."""
    allocs = sampled if allocations is None else allocations
    return {
        "shapes": extrapolate_costs(builder, sampled, seconds) if sampled and shapes == "sample" else {"mode": shapes},
        "memory": extrapolate_allocations(builder, allocs, seconds)
        if allocs and memory == "sample"
        else {"mode": memory},
    }
