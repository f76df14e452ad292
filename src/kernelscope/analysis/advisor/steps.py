"""GPU time: profiler steps that took much longer than the typical one."""

from __future__ import annotations

import statistics

from ...model import FrameKind, Profile
from . import EVERYWHERE, Finding, Severity, Threshold, Thresholds, rule
from ._evidence import ms

_STEP = "ProfilerStep#"


@rule(
    "step_outlier",
    "some steps took much longer than the median step (stalls, recompiles, data, stragglers)",
    thresholds={
        "ratio": Threshold(1.5, "report steps at least this many times the median step"),
        "min_steps": Threshold(3, "need at least this many steps to speak of a median"),
    },
    applies=EVERYWHERE,
)
def step_outlier(profile: Profile, t: Thresholds) -> list[Finding]:
    metric = "cpu_time_ns" if profile.total("cpu_time_ns") > 0 else "time_ns"
    inc = profile.inclusive(metric)
    steps = [
        (profile.frame_of(n).name, float(inc[n]), n)
        for n in range(1, len(profile))
        if profile.frame_of(n).kind is FrameKind.SCOPE and profile.frame_of(n).name.startswith(_STEP)
    ]
    if len(steps) < t["min_steps"]:
        return []
    median = statistics.median(v for _, v, _ in steps)
    slow = [(name, v, n) for name, v, n in steps if median > 0 and v >= t["ratio"] * median]
    if not slow:
        return []
    worst = max(slow, key=lambda s: s[1])
    excess = sum(v - median for _, v, _ in slow)
    return [
        Finding(
            rule="step_outlier",
            severity=Severity.WARNING,
            title=f"{len(slow)} of {len(steps)} steps took ≥{t['ratio']:g}× the median step",
            evidence=f"median {ms(median)} ms; slowest {worst[0]} {ms(worst[1])} ms ({worst[1] / median:.1f}×); "
            + ", ".join(f"{name} {ms(v)} ms" for name, v, _ in slow[:5]),
            estimated_saving_ms=ms(excess),
            saving_method="the slow steps' time above the median step",
            fix="open the slow steps in the timeline: first-step warm-up, recompiles, data stalls or a sync",
            occurrences=len(slow),
            nodes=tuple(n for _, _, n in slow),
        )
    ]
