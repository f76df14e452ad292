"""The overhead budget of a live session: how much of the run may go to stopping, folding and starting
windows, and what the budget held back (the profile's ``coverage`` metadata).

Continuous profilers keep their own cost under a fraction of the run's time; so does a session: after a
window is folded, the next one opens only while the time spent on window changes so far is at most
``fraction`` of the wall time since recording began. The first ``grace_seconds`` of recording (counted in
the recording thread's CPU time, so that other processes on a busy machine do not shorten it) are always
kept, so a short run is recorded whole. ``fraction`` 0 turns the budget off.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# Measured on benchmarks/bench_run.py (nanoGPT, 2-core CPU): see benchmarks/README.md, "overhead budget".
MAX_OVERHEAD_DEFAULT = 0.1
GRACE_SECONDS_DEFAULT = 1.5


@dataclass(frozen=True)
class OverheadBudget:
    fraction: float = MAX_OVERHEAD_DEFAULT  # 0: no budget, record everything the plan asks for
    grace_seconds: float = GRACE_SECONDS_DEFAULT  # recording always kept until this many seconds are recorded

    def __post_init__(self) -> None:
        if self.fraction < 0 or self.grace_seconds < 0:
            raise ValueError("the overhead budget and its grace period must not be negative")

    def allows(self, *, cost: float, elapsed: float, recorded: float) -> bool:
        """May a window open now? ``cost``: seconds spent changing windows so far; ``elapsed``: wall
        seconds since recording began; ``recorded``: seconds recorded so far (the recording thread's CPU time)."""
        if self.fraction <= 0 or recorded < self.grace_seconds:
            return True
        return cost <= self.fraction * elapsed

    def resume_after(self, cost: float) -> float:
        """The elapsed time from which a window may open again after spending ``cost``."""
        return cost / self.fraction if self.fraction > 0 else 0.0


class Ledger:
    """Applies a budget over a session's life and keeps what it held back. ``clock`` is injectable."""

    def __init__(self, budget: OverheadBudget, clock: Callable[[], float] = time.perf_counter) -> None:
        self.budget = budget
        self.clock = clock
        self.started: float | None = None  # when the first window opened
        self.steps_before = 0  # step() calls made before recording began
        self.cost = 0.0  # seconds spent opening, closing and folding windows
        self.holds = 0  # times the budget kept a window from opening
        self.held_seconds = 0.0
        self.held_steps = 0
        self._held_since: float | None = None
        self._ended: float | None = None

    def charge(self, seconds: float) -> None:
        self.cost += seconds

    def may_open(self, recorded: float, steps: int) -> bool:
        """Ask at a point where the plan wants recording and no window is open."""
        now = self.clock()
        if self.started is None:
            self.started = now
            self.steps_before = steps
            return True
        if self.budget.allows(cost=self.cost, elapsed=now - self.started, recorded=recorded):
            self.release(now)
            return True
        if self._held_since is None:
            self._held_since = now
            self.holds += 1
        return False

    def release(self, now: float | None = None) -> None:
        """The budget no longer holds recording (a window opens, or the plan stops wanting one)."""
        if self._held_since is not None:
            self.held_seconds += (self.clock() if now is None else now) - self._held_since
            self._held_since = None

    @property
    def holding(self) -> bool:
        return self._held_since is not None

    def step(self) -> None:
        if self._held_since is not None:
            self.held_steps += 1

    def end(self) -> None:
        if self._ended is None:
            self.release()
            self._ended = self.clock()

    def coverage(
        self, recorded_seconds: float, recorded_steps: int, steps: int, recorded_cpu_seconds: float = 0.0
    ) -> dict[str, Any]:
        """The ``coverage`` metadata: what was recorded of the run since recording began."""
        end = self._ended if self._ended is not None else self.clock()
        run = end - self.started if self.started is not None else 0.0
        return {
            "run_seconds": run,
            "recorded_seconds": recorded_seconds,
            "recorded_cpu_seconds": recorded_cpu_seconds,
            "steps": max(steps - self.steps_before, 0) if self.started is not None else 0,
            "recorded_steps": recorded_steps,
            "max_overhead": self.budget.fraction,
            "grace_seconds": self.budget.grace_seconds,
            "overhead_seconds": self.cost,
            "budget_holds": self.holds,
            "held_seconds": self.held_seconds,
            "held_steps": self.held_steps,
        }
