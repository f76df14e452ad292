"""What a live window records besides ops and lines: shapes (FLOPs, bytes) and allocations, sampled.

Recording shapes doubles torch's stop and adds to the fold, and allocations add events of their own. So by
default both are recorded over the first ``shape_seconds`` of recording, or, in a program with steps, its first
``SAMPLE_STEPS`` whole steps recorded if they come sooner, and later calls get the per-call values their context
had in the sample
(``attribute.shapes.extrapolate_sampled``). Allocations end earlier after the first gap in recording (a
window opened after unrecorded time sees frees of blocks it never saw allocated: torch prints a warning on
the program's stderr). ``Sampling`` decides per window, remembers the sample's snapshots and writes the metadata.
"""

from __future__ import annotations

from typing import Any

from ..attribute.shapes import MEMORY_METRICS, SHAPE_METRICS, extrapolate_sampled, snapshot
from ..model import ProfileBuilder

# a window that opens later than this after the program ran on from the last one follows unrecorded time
GAP_SECONDS = 0.005
# In a program with steps the sample ends sooner, after this many whole steps recorded with shapes: its steps
# repeat the same calls, and a shaped window costs torch's stop twice as much (a 1-s sample was a third of the
# grace on nanoGPT, and every window of a run the budget samples)
SAMPLE_STEPS = 2

Snapshot = dict[str, dict[int, float]]


class Sampling:
    """Per window: record shapes? allocations? (``shapes``/``memory``: "sample", "all" or "off")."""

    def __init__(self, shapes: str, memory: str, shape_seconds: float) -> None:
        self.shapes = shapes
        self.memory = memory
        self.shape_seconds = shape_seconds
        self.done = False  # the sampling windows are over
        self.window_shapes = False  # the open window records shapes
        self.window_memory = False  # the open window records allocations
        self._gap = False  # recording has had a gap: allocations are no longer recorded
        self._resumed_at: float | None = None
        self.sampled_seconds = shape_seconds  # the seconds of recording the sample took
        self._shaped: Snapshot = {}  # count and shape metrics when shape sampling ended
        self._allocs: Snapshot = {}  # count and allocations when allocation sampling ended
        self._boundaries = 0  # step boundaries passed with a sampling window open, in a row

    @property
    def in_sample(self) -> bool:
        """Is a sampled metric still being sampled?"""
        return not self.done and (self.shapes == "sample" or self.memory == "sample")

    def opening(self, now: float) -> None:
        """A window opens at ``now`` (perf_counter)."""
        if self._resumed_at is not None and now - self._resumed_at > GAP_SECONDS:
            self._gap = True
            self._boundaries = 0  # (the steps in the sample are whole only with no gap between)
        self.window_shapes = self.next_shapes
        self.window_memory = self.memory == "all" or (self.memory == "sample" and not self.done and not self._gap)

    @property
    def next_shapes(self) -> bool:
        """Would a window opened now record shapes?"""
        return self.shapes == "all" or (self.shapes == "sample" and not self.done)

    def step(self, recording: bool) -> None:
        """A step boundary, with a window open or not."""
        self._boundaries = self._boundaries + 1 if recording and self.in_sample else 0

    @property
    def _steps_sampled(self) -> bool:
        return self._boundaries > SAMPLE_STEPS  # (the first boundary begins the first whole step)

    def closed(self, recorded_seconds: float) -> tuple[bool, bool]:
        """The window stopped; ``recorded_seconds`` recorded so far. Returns the snapshots to take once it is
        folded (``folded``): of the shape sample, of the allocation sample."""
        shaped = self.in_sample and self.shapes == "sample"
        if self.in_sample:
            self.done = recorded_seconds >= self.shape_seconds or self._steps_sampled
            if self.done:
                self.sampled_seconds = recorded_seconds
        allocs = self.window_memory and self.memory == "sample"
        return shaped, allocs

    def resumed(self, now: float) -> None:
        """The program runs on at ``now``, the stopped window folded (inline) or handed to a child: a gap in
        recording is counted from here (a turnover whose stop and fold took longer than ``GAP_SECONDS`` is none)."""
        self._resumed_at = now

    def folded(self, builder: ProfileBuilder, snapshots: tuple[bool, bool]) -> None:
        """The window that ``closed`` returned ``snapshots`` for is folded into ``builder``."""
        if snapshots[0]:
            self._shaped = snapshot(builder, SHAPE_METRICS)
        if snapshots[1]:
            self._allocs = snapshot(builder, MEMORY_METRICS)

    def due(self, elapsed: float) -> bool:
        """Should the open window turn over (``elapsed`` seconds old) to end a sample?"""
        return self.in_sample and (elapsed >= self.shape_seconds or self._steps_sampled)

    def metadata(self, builder: ProfileBuilder) -> dict[str, Any]:
        """Fill in what the sample left out; the ``shapes`` and ``memory`` metadata."""
        return extrapolate_sampled(
            builder, self._shaped, self.shapes, self.memory, round(self.sampled_seconds, 4), allocations=self._allocs
        )
