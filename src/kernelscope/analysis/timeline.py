"""Timeline analysis: the per-device breakdown, idle gaps, launch statistics and sync points.

``analyze(profile)`` gathers all four; each is also a pure function of its own module.
``breakdown(profile)`` is the part an importer may store in ``metadata["timeline_breakdown"]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..model import Profile
from .breakdown import Breakdown, DeviceBreakdown, breakdown
from .idle import KERNEL_WAIT_NS, GapClass, IdleGaps, idle_gaps
from .launch import LaunchStats, launch_stats
from .syncs import Syncs, syncs

METADATA_KEY = "timeline_breakdown"


@dataclass(frozen=True)
class TimelineReport:
    breakdown: Breakdown
    idle_gaps: IdleGaps
    launch: LaunchStats
    syncs: Syncs

    def to_json(self) -> dict[str, Any]:
        return {
            **self.breakdown.to_json(),
            "idle_gaps": self.idle_gaps.to_json(),
            "launch": self.launch.to_json(),
            "syncs": self.syncs.to_json(),
        }


def has_timeline(profile: Profile) -> bool:
    return profile.timeline is not None and len(profile.timeline) > 0


def analyze(profile: Profile, kernel_wait_ns: int = KERNEL_WAIT_NS, top: int = 10) -> TimelineReport:
    return TimelineReport(
        breakdown=breakdown(profile),
        idle_gaps=idle_gaps(profile, kernel_wait_ns=kernel_wait_ns, top=top),
        launch=launch_stats(profile),
        syncs=syncs(profile, top=top),
    )


__all__ = [
    "METADATA_KEY",
    "Breakdown",
    "DeviceBreakdown",
    "GapClass",
    "IdleGaps",
    "LaunchStats",
    "Syncs",
    "TimelineReport",
    "analyze",
    "breakdown",
    "has_timeline",
]
