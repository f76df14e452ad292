"""Every time figure a live profile states, and which parts of the run it recorded whole.

``Accounts`` keeps kernelscope's own cost apart from the program's time, measured one way in every run:
the program's time is the wall time from the session's start to its end less kernelscope's cost. The cost
is what kernelscope measured itself spending outside the program (opening, stopping and folding windows,
collecting their garbage) plus an estimate of what recording cost inside the windows (the Python tracer and
the op callbacks: events × a per-event cost, never more than the window's time outside its ops).

``StepLog`` follows the step boundaries: a step is recorded *whole* when a window was open from the
boundary that began it to the one that ended it without a gap (a turnover closes and opens at one point:
no gap). What ran before the first boundary (set-up and the first step) and after the last one (the tail)
are parts of their own; each is "whole", "part" or "none".
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .policy import Budget

# The rate assumed before a window has been measured: cost per second of the program recorded, the median
# of the live matrix's programs (benchmarks/README.md); the first fold measures the real one.
ASSUMED_RATE = 2.5
# The recording cost of one event inside a window (the Python tracer and op callbacks): benchmarks/README.md
# (bench_budget.py), bounded per window by the window's time outside its ops.
RECORD_COST_PER_EVENT = 0.4e-6
TRUSTED_SECONDS = 0.05  # recorded seconds after which the measured rate replaces the assumed one
# What a second of a window without shapes costs against one of the shape sample, before one of its kind was
# measured: recording shapes about doubles torch's stop and adds half to the fold (nanoGPT, 6-step windows: stop
# 0.20-0.31 s against 0.38-0.66 s, fold 0.38-0.46 s against 0.62-0.84 s; benchmarks/README.md, "A window waits its
# turn, the steps' rate after the shape sample"). Priced at the sample's own rate (with the program's first step in
# it), the first plain window was projected at 1.35-1.52 a CPU second where plain windows then cost 0.58-0.76
PLAIN_PER_SHAPED = 0.6


@dataclass
class StepLog:
    steps: int = 0  # boundaries seen
    whole: list[int] = field(default_factory=list)  # steps (0 = what ran before the first boundary) recorded whole
    partial: int = 0  # steps recorded in part
    before_first: str = "none"  # set-up and the first step: whole, part, none
    tail: str = "none"
    _gap: bool = False  # recording stopped (or never began) since the last boundary
    _any: bool = False  # something was recorded since the last boundary
    _paused: bool = False  # stopped for a pause that records nothing of the program's own (an import, a compile)
    _window_from: int = 0  # the step running when the last window opened

    def started(self) -> None:
        """Recording may begin from here (the program's first op): nothing before it is missing."""
        self._gap = self._any = self._paused = False

    def opened(self, at_step: bool = False) -> None:
        """A window opened; ``at_step``: at the boundary itself, so the step that begins here is whole so far."""
        self._window_from = self.steps
        if at_step:
            self._gap = False
        self._any = True
        self._paused = False  # the pause is over and recording goes on: no gap

    def closed(self, pause: bool = False, at_step: bool = False) -> None:
        """A window closed; ``pause``: for an import or a compile, whose work is not the step's: a gap only
        when no window opens again before the next boundary; ``at_step``: at the boundary itself, so nothing
        of the step that begins here was recorded."""
        if at_step:
            self._any = False
        if pause:
            self._paused = True
        else:
            self._gap = True

    @property
    def window_from(self) -> int:
        """The step running when the last window opened."""
        return self._window_from

    def lost(self, window_from: int | None = None) -> None:
        """The window that just closed was lost (torch could not post-process it): the steps that ended in it
        are recorded in part at most, and so is the one running on. ``window_from``: the step running when the
        lost window opened, for a window known lost only later (a fold in the background that failed)."""
        first = self._window_from if window_from is None else window_from
        gone = [s for s in self.whole if s >= first]
        self.whole = [s for s in self.whole if s < first]
        self.partial += len(gone)
        if first == 0 and self.before_first == "whole":
            self.before_first = "part"
        self._gap = True

    def boundary(self, recording: bool) -> None:
        """A step ended; ``recording``: a window is open at this point."""
        self._gap = self._gap or self._paused
        self._paused = False
        state = "whole" if recording and not self._gap else "part" if self._any else "none"
        if self.steps == 0:
            self.before_first = state
        elif state == "whole":
            self.whole.append(self.steps)
        elif state == "part":
            self.partial += 1
        self.steps += 1
        self._gap, self._any = not recording, recording

    def restart(self, recording: bool) -> None:
        """Another step source won (steps.py): what was counted was the first step of the new source."""
        self.steps, self.whole, self.partial = 0, [], 0
        self._gap, self._any = False, recording or self._any

    def end(self, recording: bool) -> None:
        self._gap = self._gap or self._paused
        self.tail = "whole" if recording and not self._gap and self._any else "part" if self._any else "none"
        if self.steps == 0:  # no step at all: the whole run is "before the first step"
            self.before_first, self.tail = self.tail, "none"

    @property
    def whole_count(self) -> int:
        """Steps recorded whole, the first one included when all that ran before the first boundary was."""
        return len(self.whole) + (self.before_first == "whole" and self.steps > 0)

    def describe(self) -> dict[str, Any]:
        return {
            "before_first_step": self.before_first,
            "whole_steps": _ranges(self.whole),
            "partial_steps": self.partial,
            "tail": self.tail,
        }


def _ranges(steps: list[int]) -> list[list[int]]:
    out: list[list[int]] = []
    for s in steps:
        if out and out[-1][1] == s - 1:
            out[-1][1] = s
        else:
            out.append([s, s])
    return out


@dataclass
class _Rates:
    """Windows' cost per CPU second recorded: the mean, or the last window's where it was dearer (what a second
    costs changes with what the program does: a phase of Python calls costs several times one of large ops)."""

    cost: float = 0.0  # CPU seconds the windows cost, their fixed part left out ...
    seconds: float = 0.0  # ... per CPU second recorded
    last: float = 0.0  # the rate of the last window long enough to tell it
    largest: float = 0.0  # the CPU seconds of the longest window measured: how far the rate was seen to hold

    def add(self, cost: float, cpu: float) -> None:
        self.cost += cost
        self.seconds += cpu
        self.largest = max(self.largest, cpu)
        if cpu >= TRUSTED_SECONDS:
            self.last = cost / cpu

    @property
    def trusted(self) -> bool:
        return self.seconds >= TRUSTED_SECONDS

    @property
    def rate(self) -> float:
        return max(self.cost / max(self.seconds, 1e-9), self.last)


@dataclass
class Spend:
    """What one piece of kernelscope's own work took: wall seconds and the process's CPU seconds."""

    wall: float = 0.0
    cpu: float = 0.0


class Accounts:
    """What kernelscope spent and what it recorded, on two clocks: wall time (what the profile states and the
    budget is in: the program's wall time, kernelscope's wall cost) and the process's CPU time (what the cost of
    recording grows with: a program waiting for data or for the GPU records nothing while it waits, so the
    open window and the next step are projected from CPU time, converted to wall at the load measured on
    kernelscope's own work). The clocks are injectable (tests use fake ones)."""

    def __init__(
        self,
        budget: Budget,
        clock: Callable[[], float] = time.perf_counter,
        cpu_clock: Callable[[], float] = time.process_time,
    ) -> None:
        self.budget = budget
        self.clock = clock
        self.cpu_clock = cpu_clock
        self.started = clock()
        self.started_cpu = cpu_clock()
        self.ended: float | None = None
        self.ended_cpu: float | None = None
        self.own = Spend()  # measured: opening, stopping, folding windows, their garbage collection
        self.recording = 0.0  # estimated: the tracer's cost inside the windows
        self.recorded = 0.0  # the program's own time inside recorded windows
        self.recorded_wall = 0.0
        self.recorded_cpu = 0.0
        self.compile_seconds = 0.0  # torch.compile compiling (not recorded, the program's time)
        self.import_seconds = 0.0  # importing modules (not recorded, the program's time)
        self.fixed = 0.0  # the fixed CPU cost of stopping a window, as the last one measured it
        self._run = _Rates()  # every window's cost per CPU second recorded
        # the same, of the windows closed since the program's first step boundary: set-up (a phase of Python
        # calls, tokenizing a corpus) can cost ten times a step to record, and would hold the steps back long after;
        # apart for windows with shapes (the sample) and without, and ``shaping`` says which kind is priced
        self._in_steps = False
        self._steps = {False: _Rates(), True: _Rates()}
        self.shaping = False
        # closing cost against window CPU over the steps' windows (n, Σx, Σy, Σx², Σxy): its intercept is what
        # closing any window costs (forking, collecting, torch's own fixed part), which a short window at the
        # budget's edge does not amortize (nanoGPT: 0.15 s to close a one-step window, 0.08 s at the mean rate)
        self._fit = [0, 0.0, 0.0, 0.0, 0.0]
        # the rate of a window a child still folds, from its stop alone (the least it will cost): until the child is
        # done, the rate is at least this
        self._stopped_rate = 0.0
        self._stopped_shapes = False
        self.holds = 0
        self.held_seconds = 0.0
        self.held_steps = 0
        self._held_since: float | None = None

    def begin(self) -> None:
        """Recording may begin from here: the program's time is counted from this point."""
        self.started, self.started_cpu = self.clock(), self.cpu_clock()

    # --- what was spent ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def spending(self) -> Iterator[Spend]:
        """Measure a piece of kernelscope's own work and charge it."""
        spend = Spend()
        w0, c0 = self.clock(), self.cpu_clock()
        try:
            yield spend
        finally:
            spend.wall, spend.cpu = self.clock() - w0, self.cpu_clock() - c0
            self.own.wall += spend.wall
            self.own.cpu += spend.cpu

    def charge(self, spend: Spend, seconds: float) -> None:
        """Charge work kernelscope caused in the program's own time (a fork's copy-on-write faults) to a piece of
        its own work, on both clocks (the faults are the process's system time)."""
        spend.wall += seconds
        spend.cpu += seconds
        self.own.wall += seconds
        self.own.cpu += seconds

    @property
    def cost(self) -> float:
        """kernelscope's cost in wall seconds (what the profile states)."""
        return self.own.wall + self.recording

    @property
    def cost_cpu(self) -> float:
        """kernelscope's cost in CPU seconds (what the budget decides on)."""
        return self.own.cpu + self.recording

    @property
    def measured(self) -> bool:
        return self._run.trusted

    def steps_began(self) -> None:
        """The program's first step boundary: from here the rate is measured on the windows of its steps."""
        self._in_steps = True

    def _scale(self, shapes: bool) -> float:
        """What a second of a window of ``shapes``' kind costs against one of the kind priced (``shaping``)."""
        if shapes == self.shaping:
            return 1.0
        return PLAIN_PER_SHAPED if shapes else 1 / PLAIN_PER_SHAPED

    @property
    def rate(self) -> float:
        """kernelscope's CPU cost per CPU second of the program recorded, in a window of the kind ``shaping`` says:
        measured, once enough was recorded; once its steps have been, on them alone, on windows of its kind where
        one was measured (else the other kind's, scaled by ``PLAIN_PER_SHAPED``); never less than what the stop of
        a window a child still folds cost a second."""
        own, other = self._steps[self.shaping], self._steps[not self.shaping]
        if own.trusted:
            measured = own.rate
        elif other.trusted:
            measured = other.rate * self._scale(not self.shaping)
        else:
            measured = self._run.rate if self._run.trusted else ASSUMED_RATE
        return max(measured, self._stopped_rate * self._scale(self._stopped_shapes))

    def window_stopped(self, *, cpu: float, closing: Spend, fixed: float = 0.0, shapes: bool = False) -> None:
        """A window of ``cpu`` CPU seconds was stopped and a child folds it: what its stop cost (``closing``, charged)
        is known now, the rest once the child is done (``window_closed``). A child's result came in 1-1.4 s after
        the stop on 2-ms steps, while the next window recorded on at the rate of the windows before it (the
        program's warm-up), 0.4-0.8 s of own cost under what its stop came to."""
        self._stopped_rate = max(closing.cpu - fixed, 0.0) / cpu if cpu >= TRUSTED_SECONDS else 0.0
        self._stopped_shapes = shapes

    def window_closed(
        self,
        *,
        window: float,
        cpu: float,
        events: int,
        op_seconds: float,
        closing: Spend,
        fixed: float = 0.0,
        lost: bool = False,
        shapes: bool = False,
    ) -> None:
        """A window open ``window`` wall and ``cpu`` CPU seconds, holding ``op_seconds`` of op time, was stopped
        and folded (``closing``, already charged); ``fixed``: the CPU seconds opening it took (stopping one has
        about the same fixed part), left out of the rate; ``lost``: torch could not post-process it, so none of
        its time counts as recorded; ``shapes``: it recorded shapes."""
        self._stopped_rate = 0.0  # (its figures are in: the rate measured on them replaces it)
        recording = min(events * RECORD_COST_PER_EVENT, max(min(window, cpu) - op_seconds, 0.0))
        self.recording += recording
        if not lost:
            self.recorded += window - recording
            self.recorded_wall += window
            self.recorded_cpu += cpu
        cost = max(recording + closing.cpu - fixed, 0.0)
        self._run.add(cost, cpu)
        self.fixed = fixed
        if self._in_steps:
            self._steps[shapes].add(cost, cpu)
            if not lost:
                f = self._fit
                f[0] += 1
                f[1] += cpu
                f[2] += cost + fixed
                f[3] += cpu * cpu
                f[4] += cpu * (cost + fixed)

    @property
    def close_fixed(self) -> float:
        """The CPU seconds closing a window costs however short it is: the intercept of the steps' windows'
        closing cost against their CPU time (three windows of different lengths at least), never less than
        the last opening cost; else that opening cost."""
        n, sx, sy, sxx, sxy = self._fit
        spread = n * sxx - sx * sx
        if n < 3 or spread <= 1e-12 * max(n * sxx, 1e-12):
            return self.fixed
        slope = (n * sxy - sx * sy) / spread
        intercept = (sy - max(slope, 0.0) * sx) / n
        return min(max(intercept, self.fixed), sy / n)

    @property
    def load(self) -> float:
        """Wall seconds per CPU second of kernelscope's own work: 1 on an idle core, more beside a busy neighbour."""
        if self.own.cpu < 0.05:
            return 1.0
        return min(max(self.own.wall / self.own.cpu, 1.0), 10.0)

    @property
    def rate_reach(self) -> float:
        """The CPU seconds of the longest window ``rate`` was measured on (0 while it is assumed)."""
        own, other = self._steps[self.shaping], self._steps[not self.shaping]
        if own.trusted:
            return own.largest
        if other.trusted:
            return other.largest
        return self._run.largest if self._run.trusted else 0.0

    @property
    def wall_rate(self) -> float:
        """kernelscope's cost in wall seconds per CPU second of the program recorded (``rate`` × ``load``)."""
        return self.rate * self.load

    def projected(self, window_cpu: float) -> float:
        """The wall cost so far with the open window (``window_cpu`` CPU seconds old) projected in: the rate is
        measured on CPU time (a program that waits records nothing while it waits), converted at the load."""
        return self.cost + ((self.close_fixed + window_cpu * self.rate) * self.load if window_cpu else 0.0)

    def window_fixed(self) -> float:
        """The wall cost of one more window before it records anything: opening and closing it."""
        return self.close_fixed * self.load

    def program_seconds(self) -> float:
        """The program's own wall time since recording could begin: kernelscope's cost left out."""
        end = self.ended if self.ended is not None else self.clock()
        return max(end - self.started - self.cost, 0.0)

    def program_cpu(self) -> float:
        """The program's own CPU time since recording could begin: kernelscope's cost left out."""
        end = self.ended_cpu if self.ended_cpu is not None else self.cpu_clock()
        return max(end - self.started_cpu - self.cost_cpu, 0.0)

    # --- what the budget held back ----------------------------------------------------------------
    @property
    def held(self) -> bool:
        """The budget holds recording back now."""
        return self._held_since is not None

    def hold(self) -> None:
        if self._held_since is None:
            self._held_since = self.clock()
            self.holds += 1

    def release(self) -> None:
        if self._held_since is not None:
            self.held_seconds += self.clock() - self._held_since
            self._held_since = None

    def step(self) -> None:
        if self._held_since is not None:
            self.held_steps += 1

    def end(self) -> None:
        if self.ended is None:
            self.release()
            self.ended, self.ended_cpu = self.clock(), self.cpu_clock()

    def coverage(self, log: StepLog) -> dict[str, Any]:
        """The ``coverage`` metadata (docs/run.md)."""
        end = self.ended if self.ended is not None else self.clock()
        run = end - self.started
        whole = log.whole_count
        return {
            "run_seconds": run,
            "program_seconds": self.program_seconds(),
            "recorded_seconds": min(self.recorded, self.program_seconds()),
            "recorded_wall_seconds": self.recorded_wall,
            "recorded_cpu_seconds": self.recorded_cpu,
            "steps": log.steps,
            "recorded_steps": whole,
            "parts": log.describe(),
            "max_overhead": self.budget.fraction,
            "grace_seconds": self.budget.grace_seconds,
            "overhead_seconds": self.cost,
            "overhead_measured_seconds": self.own.wall,
            "overhead_cpu_seconds": self.cost_cpu,
            "program_cpu_seconds": self.program_cpu(),
            "budget_holds": self.holds,
            "held_seconds": self.held_seconds,
            "held_steps": self.held_steps,
            "compile_seconds": self.compile_seconds,
            "import_seconds": self.import_seconds,
        }
