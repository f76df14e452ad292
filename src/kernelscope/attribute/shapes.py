"""FLOPs and bytes for calls made after the shape-recording window (live runs, ``--shapes sample``)."""

from __future__ import annotations

from typing import Any

from ..model import ProfileBuilder


def extrapolate_costs(builder: ProfileBuilder, shaped: dict[str, dict[int, float]], seconds: float) -> dict[str, Any]:
    """Give each context's later calls the per-call FLOPs and bytes its shape-recorded calls had.

    ``shaped``: the ``count``, ``flops`` and ``bytes`` columns as they were when the shape window
    closed. Exact when shapes do not change; the returned metadata says how many calls were filled in.
    """
    counts_now = builder.metric_values("count")
    shaped_counts = shaped.get("count", {})
    extrapolated_calls = 0.0
    for metric in ("flops", "bytes"):
        for node, value in shaped.get(metric, {}).items():
            calls = shaped_counts.get(node, 0.0)
            extra = counts_now.get(node, 0.0) - calls
            if calls > 0 and extra > 0:
                builder.add(node, metric, value / calls * extra)
                if metric == "flops":
                    extrapolated_calls += extra
    return {
        "mode": "sample",
        "recorded_seconds": seconds,
        "note": "input shapes recorded for the first window only; FLOPs and bytes of later calls "
        "are the same context's per-call values (exact when shapes do not change)",
        "extrapolated_calls": extrapolated_calls,
    }
