"""GPU time: the device sat idle, routed to its cause (host-device syncs, a late host, other waits)."""

from __future__ import annotations

from collections import Counter

from ...model import Profile
from ..breakdown import breakdown
from ..idle import GapClass, idle_gaps
from ..syncs import syncs
from . import WITH_TIMELINE, Finding, Severity, Threshold, Thresholds, rule
from ._evidence import ms, split_line
from .data_loading import loader_ns

TOP_GAPS = 200  # the longest gaps whose lines name the place


def _is_cpu(device: str) -> bool:
    """``cpu``, ``cpu:0``, ``rank3/cpu``: a host timeline (an XLA:CPU run's ops), where idle is the program's
    Python time, not an idle accelerator."""
    return device.rpartition("/")[2].split(":")[0] == "cpu"


@rule(
    "gpu_idle",
    "the GPU was idle for a large share of the measured span",
    thresholds={
        "idle_pct": Threshold(30.0, "warn when idle time is at least this % of the device's span"),
        "min_span_ms": Threshold(1.0, "ignore devices whose span is shorter than this"),
    },
    applies=WITH_TIMELINE,
)
def gpu_idle(profile: Profile, t: Thresholds) -> list[Finding]:
    devices = [
        d
        for d in breakdown(profile).devices
        if d.total_ns >= t["min_span_ms"] * 1e6 and not _is_cpu(d.device)  # XLA:CPU's ops: the host, not a GPU
    ]
    if not devices:
        return []
    gaps = idle_gaps(profile, top=TOP_GAPS)
    sync_idle = syncs(profile).idle_after_ns
    loading = loader_ns(profile)
    out: list[Finding] = []
    for d in devices:
        idle_pct = 100.0 * d.idle_ns / d.total_ns
        if idle_pct < t["idle_pct"]:
            continue
        classes: Counter[GapClass] = Counter()
        for s in gaps.streams:
            if s.device == d.device:
                for k, c in s.classes:
                    classes[k] += c.time_ns
        gap_total = sum(classes.values()) or 1
        host_share = classes[GapClass.HOST_WAIT] / gap_total
        # the device's idle time is split by the streams' gap classes (streams overlap, shares do not)
        host_wait = d.idle_ns * host_share
        from_syncs = min(sync_idle, d.idle_ns)
        if loading >= 0.5 * d.idle_ns:
            cause = f"the data source: fetching batches took {ms(loading)} ms on the host"
            fix = "see the data_loading finding: load batches in background workers with pinned memory"
        elif from_syncs >= 0.5 * d.idle_ns:
            cause = "host-device syncs"
            fix = "see the host_sync findings: remove .item()/.cpu()/.tolist() and synchronize() from the loop"
        elif host_share >= 0.5:
            cause = "the host: kernels were launched only after the GPU ran dry"
            fix = (
                "the host is the bottleneck: overlap data loading (DataLoader workers, pin_memory), "
                "cut Python overhead (torch.compile, CUDA graphs) and take syncs out of the step"
            )
        else:
            cause = "queued work waiting on other streams or events"
            fix = "look at cross-stream dependencies and events; overlap independent streams"
        late = Counter[str | None]()
        n_late = Counter[str | None]()
        for g in gaps.top:
            if g.device == d.device and g.gap_class is GapClass.HOST_WAIT and g.line:
                late[g.line] += g.dur_ns
                n_late[g.line] += 1
        place, place_ns = late.most_common(1)[0] if late else (None, 0)
        where = (
            f"; the longest host waits end at {place} "
            f"({ms(place_ns)} ms in {n_late[place]} of the {TOP_GAPS} longest gaps)"
            if place_ns
            else ""
        )
        file, line = split_line(place)
        saving = max(host_wait - from_syncs, 0.0)
        out.append(
            Finding(
                rule="gpu_idle",
                severity=Severity.WARNING,
                title=f"{d.device} idle {idle_pct:.0f}% of {ms(d.total_ns):,} ms, mostly waiting on {cause.split(':')[0]}",
                evidence=f"idle {ms(d.idle_ns)} ms of {ms(d.total_ns)} ms; gaps waiting on the host "
                f"{host_share:.0%}, after syncs {ms(from_syncs)} ms; cause: {cause}{where}",
                file=file,
                line=line,
                estimated_saving_ms=ms(saving) if saving > 0 else None,
                saving_method="idle time in host-wait gaps (the launch came after the GPU ran dry), "
                "less the idle already counted by host_sync",
                fix=fix,
                device=d.device,
            )
        )
    return out
