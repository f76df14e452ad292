"""GPU time: launch-bound work, kernels shorter than the host call that launched them (CUDA-graph estimate)."""

from __future__ import annotations

from collections import Counter

import numpy as np

from ...model import Profile
from ..context import ContextIndex
from ..idle import GapClass, idle_gaps
from ..launch import launch_stats
from ..rows import KERNEL_CATEGORIES, in_categories, launching_call, stream_track_mask
from . import WITH_TIMELINE, Finding, Severity, Threshold, Thresholds, rule
from ._evidence import ms, split_line


@rule(
    "launch_bound",
    "many kernels ran for less time than the host took to launch them: the host cannot keep the GPU fed",
    thresholds={
        "short_pct": Threshold(30.0, "warn when at least this % of launched kernels are shorter than their launch"),
        "min_kernels": Threshold(100, "ignore devices with fewer short kernels than this"),
        "graph_launch_us": Threshold(1.0, "per-kernel launch cost inside a CUDA graph, for the saving estimate"),
    },
    applies=WITH_TIMELINE,
)
def launch_bound(profile: Profile, t: Thresholds) -> list[Finding]:
    tl = profile.timeline
    if tl is None or len(tl) == 0:
        return []
    call = launching_call(tl)
    kern = in_categories(tl, KERNEL_CATEGORIES) & stream_track_mask(tl) & (call >= 0)
    host_wait: Counter[str] = Counter()
    for s in idle_gaps(profile, top=0).streams:
        host_wait[s.device] += dict(s.classes)[GapClass.HOST_WAIT].time_ns
    ctx = ContextIndex(profile)
    out: list[Finding] = []
    for d in launch_stats(profile).devices:
        if d.launched == 0 or d.shorter_than_launch < t["min_kernels"]:
            continue
        pct = 100.0 * d.shorter_than_launch / d.launched
        if pct < t["short_pct"]:
            continue
        on = np.asarray([tr.device == d.device for tr in tl.tracks], dtype=bool)[tl.track] & kern
        rows = np.flatnonzero(on)
        calls = call[rows]
        short = rows[tl.dur_ns[rows] < tl.dur_ns[calls]]
        per_line: Counter[str | None] = Counter(ctx.line(int(n)) for n in tl.node[short].tolist())
        place, n_place = per_line.most_common(1)[0]
        overhead = float(np.maximum(tl.dur_ns[calls] - t["graph_launch_us"] * 1e3, 0).sum())
        saving = min(overhead, float(host_wait[d.device]))
        file, line = split_line(place)
        out.append(
            Finding(
                rule="launch_bound",
                severity=Severity.WARNING,
                title=f"{d.device}: {pct:.0f}% of kernels are shorter than their launch",
                evidence=f"{d.shorter_than_launch} of {d.launched} launched kernels "
                f"({ms(d.shorter_than_launch_ns)} ms of kernel time) ran shorter than the "
                f"{d.launch_call_mean_ns / 1e3:.1f} µs mean launch call; most come from "
                f"{place or 'code without a user line'} ({n_place})",
                file=file,
                line=line,
                estimated_saving_ms=ms(saving) if saving > 0 else None,
                saving_method="launch-call time above the per-kernel cost in a CUDA graph, "
                "capped by the GPU's host-wait idle time",
                fix="capture the step in a CUDA graph (torch.compile mode='reduce-overhead', torch.cuda.graphs) "
                "or fuse the small kernels (torch.compile)",
                occurrences=d.shorter_than_launch,
                device=d.device,
            )
        )
    return out
