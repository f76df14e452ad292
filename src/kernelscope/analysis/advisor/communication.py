"""GPU time: exposed communication (collectives not overlapped by compute) and stragglers across ranks."""

from __future__ import annotations

from collections import Counter

import numpy as np

from ...model import Profile
from ...model.timeline import Category
from ..breakdown import breakdown
from ..context import ContextIndex
from ..rows import device_rows, linked
from . import WITH_TIMELINE, Finding, Severity, Threshold, Thresholds, rule
from ._evidence import ms, split_line


@rule(
    "exposed_comm",
    "communication kernels ran while no computation overlapped them",
    thresholds={"exposed_pct": Threshold(10.0, "warn when exposed communication is this % of the span")},
    applies=WITH_TIMELINE,
)
def exposed_comm(profile: Profile, t: Thresholds) -> list[Finding]:
    tl = profile.timeline
    if tl is None:
        return []
    ctx = ContextIndex(profile)
    comm = device_rows(tl) & linked(tl) & (tl.category == int(Category.COMM))
    out: list[Finding] = []
    for d in breakdown(profile).devices:
        if not d.total_ns or 100.0 * d.exposed_comm_ns / d.total_ns < t["exposed_pct"]:
            continue
        on = np.asarray([tr.device == d.device for tr in tl.tracks], dtype=bool)[tl.track] & comm
        rows = np.flatnonzero(on)
        by_op: Counter[tuple[str | None, str | None]] = Counter()
        for node, dur in zip(tl.node[rows].tolist(), tl.dur_ns[rows].tolist(), strict=True):
            by_op[(ctx.line(node), ctx.name(node))] += dur
        (place, kernel), place_ns = by_op.most_common(1)[0] if by_op else ((None, None), 0)
        overlap = 1.0 - d.exposed_comm_ns / d.total_comm_ns if d.total_comm_ns else 0.0
        file, line = split_line(place)
        out.append(
            Finding(
                rule="exposed_comm",
                severity=Severity.WARNING,
                title=f"{d.device}: {100.0 * d.exposed_comm_ns / d.total_ns:.0f}% "
                f"of the span is communication with no compute overlapping it",
                evidence=f"exposed communication {ms(d.exposed_comm_ns)} ms of {ms(d.total_comm_ns)} ms communication "
                f"({overlap:.0%} overlapped) in a {ms(d.total_ns)} ms span; computation {ms(d.computation_ns)} ms; "
                f"most time in {(kernel or '?')[:80]} at {place or 'code without a user line'} ({ms(place_ns)} ms of kernel time)",
                file=file,
                line=line,
                estimated_saving_ms=ms(d.exposed_comm_ns),
                saving_method="exposed communication time: the upper bound if it were fully overlapped with compute",
                fix="overlap communication with compute: DDP bucketing (bucket_cap_mb), gradient_as_bucket_view, "
                "FSDP prefetch, async collectives; or shrink it (gradient compression, fewer syncs per step)",
                occurrences=int(rows.size),
                device=d.device,
            )
        )
    return out


@rule(
    "rank_straggler",
    "one rank computed much longer than the others, so the others wait for it in collectives",
    thresholds={"slower_pct": Threshold(10.0, "warn when a device's compute is this % above the fastest one")},
    applies=WITH_TIMELINE,
)
def rank_straggler(profile: Profile, t: Thresholds) -> list[Finding]:
    devices = [d for d in breakdown(profile).devices if d.computation_ns > 0]
    if len(devices) < 2:
        return []
    fastest = min(devices, key=lambda d: d.computation_ns)
    slowest = max(devices, key=lambda d: d.computation_ns)
    excess = slowest.computation_ns - fastest.computation_ns
    pct = 100.0 * excess / fastest.computation_ns
    if pct < t["slower_pct"]:
        return []
    return [
        Finding(
            rule="rank_straggler",
            severity=Severity.WARNING,
            title=f"{slowest.device} computes {pct:.0f}% longer than {fastest.device}",
            evidence=f"computation {ms(slowest.computation_ns)} ms on {slowest.device} vs {ms(fastest.computation_ns)} ms "
            f"on {fastest.device} over {len(devices)} devices; the others wait in their next collective",
            estimated_saving_ms=ms(excess),
            saving_method="compute time of the slowest device above the fastest one",
            fix="balance the work across ranks (uneven shards, data-dependent shapes, a slower device or host)",
            device=slowest.device,
        )
    ]
