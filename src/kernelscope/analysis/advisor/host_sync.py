"""GPU time: host-device synchronisation points per user line, with the GPU idle they cause."""

from __future__ import annotations

from ...model import Profile
from ..breakdown import breakdown
from ..syncs import syncs
from . import WITH_TIMELINE, Finding, Severity, Threshold, Thresholds, rule
from ._evidence import ms, split_line

_FIX = {
    "item": "keep the value on the device (torch.where, masking) or read it once after the loop",
    "synchronize": "drop explicit synchronize() calls from the step (use CUDA events for timing)",
    "Pageable": "copy to pinned memory with non_blocking=True (tensor.to('cpu', non_blocking=True) "
    "into a pin_memory() buffer) and read it later",
}


@rule(
    "host_sync",
    "the host waited for the GPU (item, .cpu(), synchronize, pageable copies) and left it idle",
    thresholds={
        "min_ms": Threshold(1.0, "report a line whose syncs cost at least this (host blocked + GPU idle after)"),
        "warn_pct": Threshold(2.0, "warn when the GPU idle after the line's syncs is this % of the span"),
    },
    applies=WITH_TIMELINE,
)
def host_sync(profile: Profile, t: Thresholds) -> list[Finding]:
    report = syncs(profile, top=0)
    spans = [d.total_ns for d in breakdown(profile).devices]
    span = max(spans) if spans else 0
    out: list[Finding] = []
    for s in report.by_line:
        cost = s.host_ns + s.idle_after_ns
        if cost < t["min_ms"] * 1e6:
            continue
        what = ", ".join(f"{name} ×{n}" for name, n in s.names[:3])
        share = 100.0 * s.idle_after_ns / span if span else 0.0
        fix = "; ".join(text for key, text in _FIX.items() if any(key in name for name, _ in s.names))
        file, line = split_line(s.line)
        out.append(
            Finding(
                rule="host_sync",
                severity=Severity.WARNING if share >= t["warn_pct"] else Severity.INFO,
                title=f"{s.count} host-device sync(s) at {s.line or 'code without a user line'} "
                f"leave the GPU idle {ms(s.idle_after_ns):,} ms",
                evidence=f"{what}; host blocked {ms(s.host_ns)} ms, GPU idle after them {ms(s.idle_after_ns)} ms "
                f"({share:.1f}% of the span)",
                file=file,
                line=line,
                estimated_saving_ms=ms(s.idle_after_ns) if s.idle_after_ns else None,
                saving_method="GPU idle from each sync's end to the device's next event (shared stretches counted once)",
                fix=fix or "avoid reading device values on the host inside the step",
                occurrences=s.count,
            )
        )
    return out
