"""Whole jobs: the rank that arrives last at collectives, skewed collectives, work spread unevenly over ranks.

These read the cross-rank analysis (``analysis.ranks.job_analysis``: ``store.ranks``, DuckDB over each rank's tables) of a merged
profile — ``kernelscope import --store`` writes one, so does ``import`` of several rank files.
"""

from __future__ import annotations

import weakref

from ...model import Profile
from ..ranks import RanksReport, job_analysis
from . import WITH_TIMELINE, Finding, Severity, Threshold, Thresholds, rule
from ._evidence import ms, split_line

_CACHE: weakref.WeakKeyDictionary[Profile, RanksReport | None] = weakref.WeakKeyDictionary()


def job_report(profile: Profile) -> RanksReport | None:
    """The cross-rank analysis of a merged profile (None for one rank, or without the store extra); cached.

    The rules below and the report's Ranks view read the same one.
    """
    if (profile.metadata.get("source") or {}).get("format") != "merged":
        return None
    if profile not in _CACHE:
        _CACHE[profile] = job_analysis(profile)
    return _CACHE[profile]


def use_job_report(profile: Profile, report: RanksReport) -> None:
    """Use ``report`` for ``profile`` (a store's merged profile: the store's analysis matches by NCCL seq_num)."""
    _CACHE[profile] = report


@rule(
    "straggler",
    "one rank arrives last at most collectives: the others wait for it",
    thresholds={"last_pct": Threshold(25.0, "warn when one rank arrives last at this % of the collectives")},
    applies=WITH_TIMELINE,
)
def straggler(profile: Profile, t: Thresholds) -> list[Finding]:
    report = job_report(profile)
    s = report.straggler if report is not None else None
    if s is None or not s.collectives or 100.0 * s.last_arrivals / s.collectives < t["last_pct"]:
        return []
    lines = [e for e in s.excess if e.by == "line"]
    modules = [e for e in s.excess if e.by == "module"]
    where = lines[0] if lines else None
    file, line = split_line(where.key if where else None)
    spent = "; ".join(f"{e.by} {e.key}: +{ms(e.extra_ns)} ms" for e in (lines[:2] + modules[:2]))
    return [
        Finding(
            rule="straggler",
            severity=Severity.WARNING,
            title=f"rank {s.rank} arrives last at {s.last_arrivals} of {s.collectives} collectives",
            evidence=f"its time above the median rank's: {spent or 'no line or module stands out'}",
            file=file,
            line=line,
            module=modules[0].key if modules else None,
            estimated_saving_ms=ms(where.extra_ns) if where else None,
            saving_method="the straggler's time at its top line above the median rank's",
            fix="make that rank's work like the others' (uneven shards or batches, data-dependent shapes, "
            "a slower GPU, host or link on that rank)",
            device=f"rank {s.rank}",
        )
    ]


@rule(
    "collective_skew",
    "a collective whose ranks arrived far apart (last arrival − first arrival)",
    thresholds={
        "skew_ms": Threshold(1.0, "warn when a collective's skew is at least this many ms"),
        "times_median": Threshold(10.0, "... and this many times the median collective's skew"),
    },
    applies=WITH_TIMELINE,
)
def collective_skew(profile: Profile, t: Thresholds) -> list[Finding]:
    report = job_report(profile)
    if report is None or not report.top_skew:
        return []
    skews = sorted(c.skew_ns for c in report.top_skew)
    median = skews[len(skews) // 2]
    out: list[Finding] = []
    for c in report.top_skew:
        if c.skew_ns < t["skew_ms"] * 1e6 or c.skew_ns < t["times_median"] * median:
            continue
        file, line = split_line(c.line)
        seq = f"seq {c.seq}" if c.by_seq else f"#{c.seq} in {c.group}"
        out.append(
            Finding(
                rule="collective_skew",
                severity=Severity.WARNING,
                title=f"{c.name[:80]} ({seq}): rank {c.last_rank} arrived {ms(c.skew_ns)} ms after rank {c.first_rank}",
                evidence=f"skew {ms(c.skew_ns)} ms over {c.ranks} ranks; a typical collective's skew here "
                f"(of the {len(skews)} most skewed) is {ms(median)} ms",
                file=file,
                line=line,
                estimated_saving_ms=ms(c.skew_ns),
                saving_method="the other ranks' wait: last arrival − first arrival",
                fix=f"see what rank {c.last_rank} did before this collective (host work, I/O, a sync, uneven data)",
                device=f"rank {c.last_rank}",
            )
        )
    return out


@rule(
    "rank_imbalance",
    "a line or module takes much longer on some ranks than on the median rank",
    thresholds={
        "spread_pct": Threshold(20.0, "warn when max − min over ranks is this % of the median rank's time"),
        "min_ms": Threshold(1.0, "... and at least this many ms"),
    },
    applies=WITH_TIMELINE,
)
def rank_imbalance(profile: Profile, t: Thresholds) -> list[Finding]:
    report = job_report(profile)
    if report is None:
        return []
    out: list[Finding] = []
    for sp in report.spread:
        gap = sp.max_ns - sp.min_ns
        if gap < t["min_ms"] * 1e6 or sp.median_ns <= 0 or 100.0 * gap / sp.median_ns < t["spread_pct"]:
            continue
        file, line = split_line(sp.key) if sp.by == "line" else (None, None)
        out.append(
            Finding(
                rule="rank_imbalance",
                severity=Severity.INFO,
                title=f"{sp.by} {sp.key}: {ms(sp.min_ns)}–{ms(sp.max_ns)} ms over ranks (most on rank {sp.max_rank})",
                evidence=f"median rank {ms(sp.median_ns)} ms; max − min {ms(gap)} ms ({100.0 * gap / sp.median_ns:.0f}% of the median)",
                file=file,
                line=line,
                module=sp.key if sp.by == "module" else None,
                estimated_saving_ms=ms(sp.max_ns - sp.median_ns),
                saving_method="the slowest rank's time above the median rank's",
                fix="even out the work of this line/module across ranks (or it is waiting: see collective_skew)",
                device=f"rank {sp.max_rank}",
            )
        )
    return out
