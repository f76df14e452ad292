"""GPU time: host-to-device copies from pageable memory (slow, and they cannot overlap compute)."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from ...model import Profile
from ...model.timeline import Category
from ..breakdown import breakdown
from ..context import ContextIndex
from ..rows import device_rows
from . import WITH_TIMELINE, Finding, Severity, Threshold, Thresholds, rule
from ._evidence import ms, split_line


def is_pageable_htod(name: str) -> bool:
    return "HtoD" in name and "Pageable" in name


@rule(
    "pageable_memcpy",
    "host-to-device copies from pageable memory: staged through a bounce buffer and never asynchronous",
    thresholds={
        "min_ms": Threshold(1.0, "report a line whose pageable copies took at least this long"),
        "warn_pct": Threshold(2.0, "warn when they are at least this % of the span"),
        "pinned_speedup": Threshold(2.0, "how much faster a copy from pinned memory is, for the saving estimate"),
    },
    applies=WITH_TIMELINE,
)
def pageable_memcpy(profile: Profile, t: Thresholds) -> list[Finding]:
    tl = profile.timeline
    if tl is None or len(tl) == 0:
        return []
    names = profile.frames
    rows = np.flatnonzero(device_rows(tl) & (tl.category == int(Category.MEMCPY)))
    ctx = ContextIndex(profile)
    per_line: dict[str | None, list[int]] = defaultdict(lambda: [0, 0])
    for node, dur in zip(tl.node[rows].tolist(), tl.dur_ns[rows].tolist(), strict=True):
        if is_pageable_htod(names[int(profile.frame[node])].name):
            acc = per_line[ctx.line(node)]
            acc[0] += 1
            acc[1] += dur
    spans = [d.total_ns for d in breakdown(profile).devices]
    span = max(spans) if spans else 0
    out: list[Finding] = []
    for place, (count, dur) in sorted(per_line.items(), key=lambda kv: -kv[1][1]):
        if dur < t["min_ms"] * 1e6:
            continue
        share = 100.0 * dur / span if span else 0.0
        saving = dur * (1.0 - 1.0 / t["pinned_speedup"])
        file, line = split_line(place)
        out.append(
            Finding(
                rule="pageable_memcpy",
                severity=Severity.WARNING if share >= t["warn_pct"] else Severity.INFO,
                title=f"{count} host-to-device copies from pageable memory at {place or 'code without a user line'} "
                f"({ms(dur):,} ms)",
                evidence=f"Memcpy HtoD (Pageable -> Device) ×{count}, {ms(dur)} ms on the GPU ({share:.1f}% of the span)",
                file=file,
                line=line,
                estimated_saving_ms=ms(saving),
                saving_method=f"copy time less the same copies at {t['pinned_speedup']:g}× the speed from pinned memory",
                fix="pin the host tensors (DataLoader(pin_memory=True) or tensor.pin_memory()) and copy with "
                "non_blocking=True so the copy overlaps compute",
                occurrences=count,
            )
        )
    return out
