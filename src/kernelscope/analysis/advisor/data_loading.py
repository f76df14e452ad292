"""Host side: the step waited on its data source (the DataLoader iterator's ``__next__``)."""

from __future__ import annotations

from ...model import FrameKind, Profile
from ..context import ContextIndex
from . import EVERYWHERE, Finding, Severity, Threshold, Thresholds, rule
from ._evidence import ms, split_line

_LOADER = "enumerate(DataLoader)#"


def _metric(profile: Profile) -> str:
    return "cpu_time_ns" if profile.total("cpu_time_ns") > 0 else "time_ns"


def loader_ns(profile: Profile) -> float:
    """Host time spent fetching batches (DataLoader iterator scopes, outermost only)."""
    inc = profile.inclusive(_metric(profile))
    total = 0.0
    for node in range(1, len(profile)):
        f = profile.frame_of(node)
        if f.kind is FrameKind.SCOPE and f.name.startswith(_LOADER):
            total += float(inc[node])
    return total


@rule(
    "data_loading",
    "fetching the next batch took a large share of the host's time: the GPU waits for data",
    thresholds={"warn_pct": Threshold(5.0, "warn when fetching batches is at least this % of the host time")},
    applies=EVERYWHERE,
)
def data_loading(profile: Profile, t: Thresholds) -> list[Finding]:
    inc = profile.inclusive(_metric(profile))
    total = float(inc[0]) or 1.0
    ctx = ContextIndex(profile)
    out: list[Finding] = []
    for node in range(1, len(profile)):
        f = profile.frame_of(node)
        if f.kind is not FrameKind.SCOPE or not f.name.startswith(_LOADER) or inc[node] <= 0:
            continue
        share = 100.0 * inc[node] / total
        file, line = split_line(ctx.line(node))
        out.append(
            Finding(
                rule="data_loading",
                severity=Severity.WARNING if share >= t["warn_pct"] else Severity.INFO,
                title=f"Fetching batches took {share:.0f}% of the host time ({ms(inc[node]):,} ms)",
                evidence=f"{f.name}: {ms(inc[node])} ms of {ms(total)} ms host time",
                file=file,
                line=line,
                estimated_saving_ms=ms(inc[node]),
                saving_method="the time in the iterator: the upper bound if loading fully overlapped the step",
                fix="load in the background: DataLoader(num_workers>0, pin_memory=True, prefetch_factor, "
                "persistent_workers=True); move preprocessing off the critical path",
                nodes=(node,),
            )
        )
    return out
