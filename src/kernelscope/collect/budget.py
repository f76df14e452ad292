"""The overhead budget of a live session: how much of the run kernelscope may spend, and what it held back
(the profile's ``coverage`` metadata).

Everything kernelscope spends counts: starting a window, the per-op cost of recording inside it (line
capture, shapes, the Python tracer), stopping it (torch's own post-processing, which dominates on tiny-op
programs: ~9 µs per event with stacks on this 2-core VM against ~2.3 µs for the op itself) and folding it.
What a window costs once it is stopped and folded is measured; what the open window will cost is projected
from its length at the rate the earlier windows cost per second recorded (``rate``; the first window is
projected at ``FIRST_RATE``, the worst case measured on a tiny-op program: see benchmarks/README.md).

The budget allows at most ``fraction`` of the *program's own* time (wall time less kernelscope's cost), and
never less than ``grace_cost`` seconds, so a short run is recorded whole. ``fraction`` 0 turns it off: every
op is recorded.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# Measured on benchmarks/bench_run.py and bench_budget.py (2-core CPU): see benchmarks/README.md.
MAX_OVERHEAD_DEFAULT = 0.1
GRACE_SECONDS_DEFAULT = 0.2  # seconds of kernelscope's cost always allowed
FIRST_RATE = 14.0  # projected cost per recorded second until a window has been measured (tiny ops, stacks)
TRUSTED_SECONDS = 0.01  # recorded seconds (a probe window) after which a rate below FIRST_RATE is trusted
PROBE_SECONDS = 0.01  # the first window turns over at the first safe point after this long: the rate is measured


@dataclass(frozen=True)
class OverheadBudget:
    fraction: float = MAX_OVERHEAD_DEFAULT  # 0: no budget, record everything the plan asks for
    grace_seconds: float = GRACE_SECONDS_DEFAULT  # kernelscope's cost always allowed

    def __post_init__(self) -> None:
        if self.fraction < 0 or self.grace_seconds < 0:
            raise ValueError("the overhead budget and its grace must not be negative")

    @property
    def off(self) -> bool:
        return self.fraction <= 0

    def allowance(self, program_seconds: float) -> float:
        """The cost allowed after ``program_seconds`` of the program's own time."""
        return max(self.grace_seconds, self.fraction * max(program_seconds, 0.0))

    def allows(self, *, cost: float, elapsed: float) -> bool:
        """May ``cost`` seconds have been spent after ``elapsed`` wall seconds?"""
        return self.off or cost <= self.allowance(elapsed - cost)


class Ledger:
    """Applies a budget over a session's life and keeps what it spent and held back. ``clock`` is
    injectable."""

    def __init__(self, budget: OverheadBudget, clock: Callable[[], float] = time.perf_counter) -> None:
        self.budget = budget
        self.clock = clock
        self.started: float | None = None  # when the first window opened
        self.steps_before = 0  # steps made before recording began
        self.cost = 0.0  # seconds spent: starting, recording in, stopping and folding windows
        self.rate = FIRST_RATE  # cost per second recorded, as measured on the windows so far
        self.measured = False
        self.recorded = 0.0  # the program's own time inside the recorded windows
        self._window_cost = 0.0  # what the windows cost (recording, stopping, folding) ...
        self._window_seconds = 0.0  # ... for this many seconds recorded
        self.holds = 0  # times the budget kept a window from opening or cut one short
        self.held_seconds = 0.0
        self.held_steps = 0
        self._held_since: float | None = None
        self._ended: float | None = None

    def charge(self, seconds: float) -> None:
        self.cost += seconds

    def window_closed(self, *, window: float, events: int, stop_and_fold: float) -> None:
        """A window of ``window`` seconds was stopped and folded in ``stop_and_fold`` seconds. The cost of
        recording inside it is the part of its length that was kernelscope's: estimated per event."""
        recording = min(window * 0.5, events * RECORD_COST_PER_EVENT)
        spent = recording + stop_and_fold
        self.cost += spent
        self.recorded += window - recording
        self._window_cost += spent
        self._window_seconds += window
        if self._window_seconds > 0:
            self.rate = self._window_cost / self._window_seconds
            if self._window_seconds < TRUSTED_SECONDS:  # a few ms say little: stay on the safe side until then
                self.rate = max(self.rate, FIRST_RATE)
            else:
                self.measured = True

    def _elapsed(self, now: float) -> float:
        return now - self.started if self.started is not None else 0.0

    def may_continue(self, window: float, ahead: float = 0.0) -> bool:
        """May the open window (``window`` seconds so far) go on for ``ahead`` more seconds?"""
        if self.budget.off:
            return True
        now = self.clock()
        projected = self.cost + (window + ahead) * self.rate
        if self.budget.allows(cost=projected, elapsed=self._elapsed(now) + ahead * self.rate):
            return True
        self._hold(now)
        return False

    def may_open(self, steps: int, ahead: float = 0.0) -> bool:
        """Ask at a point where the plan wants recording and no window is open; ``ahead``: the length of
        the window it would be (one step)."""
        now = self.clock()
        if self.started is None:
            self.started = now
            self.steps_before = steps
        if self.budget.off or self.budget.allows(
            cost=self.cost + ahead * self.rate, elapsed=self._elapsed(now) + ahead * self.rate
        ):
            self.release(now)
            return True
        self._hold(now)
        return False

    def _hold(self, now: float) -> None:
        if self._held_since is None:
            self._held_since = now
            self.holds += 1

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
        """The ``coverage`` metadata: what was recorded of the run since recording began, and what it cost.
        ``program_seconds`` is the run's own time (wall time less kernelscope's ``overhead_seconds``)."""
        end = self._ended if self._ended is not None else self.clock()
        run = end - self.started if self.started is not None else 0.0
        return {
            "run_seconds": run,
            "program_seconds": max(run - self.cost, 0.0),
            "recorded_seconds": self.recorded,
            "recorded_wall_seconds": recorded_seconds,
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


# The recording cost of one event inside a window (Python tracer + op callbacks), measured by
# benchmarks/bench_budget.py on this 2-core VM: ~0.4 µs per event (2.7 µs per 7 events of a tiny op).
RECORD_COST_PER_EVENT = 0.4e-6
