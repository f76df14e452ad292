"""When a live session records: a pure function from a snapshot of the run to one action and its reason.

The session (torch_live.py) takes a ``Snapshot`` at every checkpoint (a step boundary, a module call, every
N-th torch call), asks ``decide`` and carries the ``Decision`` out where it is safe (safepoint.py). Nothing
here reads a clock or torch: tests drive it with literal snapshots.

The default policy, with ``fraction`` f and ``grace`` g (``Budget``):

- **Before the first step** (set-up, or a program without steps) everything is recorded until kernelscope's
  cost reaches a share of the grace (``setup_share``), so that what is left of it goes to whole steps.
- **At a step boundary** a window opens, or the open one goes on, when recording one more step (the longest
  recent step, ``STEP_MARGIN`` over, times the measured cost rate) keeps the cost within ``max(g, f × program
  time)`` with ``OPEN_SPARE`` to spare; the first
  ``whole_steps`` steps are owed: they are recorded whenever one step costs less than the grace to record.
  Otherwise the open window closes *at* the boundary: a recorded step is always a whole step.
- **Inside a step** a window never opens (the step would be a fragment) and closes only when the step has
  run past the longest recent step and the cost passes the allowance: one step costs more to record than the
  budget allows (the session counts that step as recorded in part and the header says so). A step of its usual
  length that finds the cost past the allowance ends first, and the window closes at its boundary.
- **Measured as it goes**: an open window turns over at a step boundary once it is far longer than any window
  the rate was measured on, or (folding inline) once its projection passes a third of what the allowance leaves;
  the session then asks again, with the cost measured, before the next window opens.
- **Debts**: a stop pays besides its projection the wait for the last window's child, if it still folds, and a
  window a child would fold costs its fold if the program ends after the step; at each boundary (and before the
  first step) the budget holds room for both (``fold_wait``, ``turnover_wait``).
- A short program is recorded whole: when everything costs less than the grace nothing is ever held.

``fraction`` 0 turns the budget off (record everything the plan asks for).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

GRACE_SECONDS_DEFAULT = 3.0
MAX_OVERHEAD_DEFAULT = 0.1
SETUP_SHARE = 1 / 2  # of the grace, for what runs before the first step
WHOLE_STEPS = 3  # whole steps owed to every run that makes them, when one step fits in the grace
OWED_CAP = 2.0  # the owed whole steps may take the cost up to this many times the allowance
# A window opens, or records on, at a step boundary only where the longest recent step, this much longer, fits
# the budget: a step that overruns it is cut (the header's promise), and a cut step is a fragment (with the
# margin on opening only, an open window that recorded on at the median step was cut inside the next one in 2 of
# 9 nanoGPT-200 runs)
STEP_MARGIN = 1.25
# ... and leaves this share of the allowance to spare: what closing a short window costs varies by a few per cent
# around its projection (nanoGPT-200 ended 0.8% over the grace without it)
OPEN_SPARE = 0.97
MIN_WINDOW = 0.1  # seconds of the program a window must be able to record to be worth opening (no steps)
# An open window this many times longer (CPU) than any the rate was measured on turns over at a step boundary where
# its projected cost is ``REACH_SHARE`` of the allowance or more: the first steps' windows run the program's warm-up
# (2-ms steps that took 20 ms each), and a rate measured there priced a 1.3-s window of steady steps at two thirds
# of its cost (4.4 s of own cost on the 3-s grace)
RATE_REACH = 4.0
REACH_SHARE = 0.1
# ... and a step runs long (is cut inside when the cost passes the allowance) only past the longest recent one by
# this much at least: on 2-ms steps, what kernelscope's own checkpoint work leaves in a step's CPU time is more than
# a quarter of a step
LONG_STEP_SLACK = 0.05
# At a step boundary an open window whose projected cost passes this share of what the allowance has left (beside
# the windows already closed) turns over, so the next step is decided on what it really cost: what a recorded
# second costs moves with the program's phase and with what runs beside it (a 1-s window of 2-ms steps cost 1.6x
# a CPU second what the 0.26-s window before it did, and ended the run 0.5 s past the 3-s grace)
BET_SHARE = 1 / 3


class Action(enum.Enum):
    NOTHING = "nothing"
    OPEN = "open"
    CLOSE = "close"
    TURN_OVER = "turn over"  # close and fold the open window, open the next one at once (no gap)


@dataclass(frozen=True)
class Decision:
    action: Action
    reason: str
    held: bool = False  # the budget is what keeps recording off
    measure: bool = False  # a turnover to measure the window's cost: fold it here and now, then ask again


@dataclass(frozen=True)
class Budget:
    fraction: float = MAX_OVERHEAD_DEFAULT  # 0: no budget, record everything the plan asks for
    grace_seconds: float = GRACE_SECONDS_DEFAULT  # kernelscope's cost always allowed
    setup_share: float = SETUP_SHARE
    whole_steps: int = WHOLE_STEPS

    def __post_init__(self) -> None:
        if self.fraction < 0 or self.grace_seconds < 0:
            raise ValueError("the overhead budget and its grace must not be negative")

    @property
    def off(self) -> bool:
        return self.fraction <= 0

    def allowance(self, program_seconds: float) -> float:
        """The cost allowed after ``program_seconds`` of the program's own time."""
        return max(self.grace_seconds, self.fraction * max(program_seconds, 0.0))

    def allows(self, *, cost: float, program_seconds: float) -> bool:
        return self.off or cost <= self.allowance(program_seconds)


@dataclass(frozen=True)
class Snapshot:
    recording: bool  # a window is open
    blocked: str | None = None  # why nothing may be recorded now (paused, compiling, the program's profiler...)
    plan_wants: bool = True  # the plan (skip_first, schedule, steps, duration) wants this moment recorded
    at_step: bool = False  # at a step boundary
    steps: int = 0  # step boundaries seen since recording could begin
    whole_steps: int = 0  # steps recorded whole so far
    fold_due: bool = False  # the open window has run long enough to be folded
    cost: float = 0.0  # kernelscope's cost so far, the open window's projected in
    program_seconds: float = 0.0  # the program's own time so far
    step_seconds: float | None = None  # the last steps' median own time, once one was seen whole
    step_high: float | None = None  # the longest of the last steps: a window opens only where that one fits
    rate: float = 0.0  # kernelscope's cost per second of the program recorded (measured or assumed)
    window_fixed: float = 0.0  # what one more window costs before it records anything (opening, closing it)
    folding: bool = False  # the last window still folds beside the program (in a child)
    fold_wait: float = 0.0  # how long a window stopped now would wait for it (estimated: 0 past the estimate)
    # how long the open window would fold beside the program if it were stopped now (0: it would fold inline, in
    # its own stop's time): a window turned over now waits for that at its own stop
    turnover_wait: float = 0.0
    sampled: bool = False  # the budget has held recording back before: the run is being sampled
    window_cost: float = 0.0  # the open window's projected part of ``cost`` (closing it, what it recorded)
    in_step: float | None = None  # the step under way's own CPU seconds so far (None: before the first boundary)
    window_cpu: float = 0.0  # the open window's CPU seconds so far
    rate_reach: float = 0.0  # the CPU seconds of the longest window the rate was measured on (0: assumed)


def _keep(s: Snapshot, why: str) -> Decision:
    return (
        Decision(Action.TURN_OVER, f"{why}; the window is due to fold") if s.fold_due else Decision(Action.NOTHING, why)
    )


def _turnover_fits(s: Snapshot, budget: Budget, step: float) -> bool:
    """Does a window turned over now fit the budget for one step? A turnover forks a child to fold this window,
    and the next window's stop waits for that child: turned over at the budget's edge, nanoGPT-200's last window
    closed a few steps later and waited 0.23-0.28 s for it (own cost 3.1-3.2 s on the 3-s grace, 2 of 3 runs)."""
    if budget.off or not s.fold_due or s.turnover_wait <= 0:
        return True
    return _step_fits(s, budget, step, extra=s.window_fixed + max(s.turnover_wait - step, 0.0))


def _step_fits(s: Snapshot, budget: Budget, step: float, extra: float) -> bool:
    """Does one more step of ``step`` seconds fit the budget, with ``extra`` seconds besides, and a spare?"""
    return budget.allows(cost=(s.cost + extra + step * s.rate) / OPEN_SPARE, program_seconds=s.program_seconds + step)


def decide(s: Snapshot, budget: Budget) -> Decision:
    if s.blocked is not None:
        return Decision(Action.CLOSE if s.recording else Action.NOTHING, s.blocked)
    if not s.plan_wants:
        return Decision(Action.CLOSE if s.recording else Action.NOTHING, "the plan does not record here")
    if budget.off:
        return _keep(s, "recording everything") if s.recording else Decision(Action.OPEN, "recording everything")
    if s.steps == 0:
        return _before_steps(s, budget)
    if s.at_step:
        return _at_step(s, budget)
    if not s.recording:
        if not s.sampled and s.cost + s.window_fixed + s.rate * MIN_WINDOW <= budget.allowance(s.program_seconds):
            return Decision(Action.OPEN, "recording everything while it fits the budget")
        return Decision(Action.NOTHING, "windows open at step boundaries: a recorded step is a whole step", True)
    # (inside a step the cut waits for the allowance itself, the open window projected in: what the header promises)
    if s.cost > budget.allowance(s.program_seconds) and not _owed(s, budget):
        if _runs_long(s):
            return Decision(Action.CLOSE, "this step costs more to record than the budget allows: cut inside it", True)
        # (a dearer rate measured mid-step, a child's fold come in: the step ends within its usual length, and
        # cutting it saves at most its own cost while it leaves a step in part)
        return Decision(Action.NOTHING, "past the budget: the window closes at this step's end", True)
    if not _turnover_fits(s, budget, _step_estimate(s)) and not _owed(s, budget):
        return Decision(Action.NOTHING, "recording a whole step; a turnover would wait past the budget")
    return _keep(s, "recording a whole step")


def _runs_long(s: Snapshot) -> bool:
    """Has the step under way run past the longest recent step (``STEP_MARGIN`` over), or is its length unknown?
    Only such a step is cut inside when the cost passes the allowance: one step costs more to record than the budget
    allows. A step of its usual length that finds the cost past the allowance (the window's rate re-measured by a
    fold that came in mid-step: 2-ms steps cut at 3.1 s of cost and ended 3.85 s on the 3-s grace) ends first."""
    if s.step_high is None or s.in_step is None:
        return True
    return s.in_step > max(STEP_MARGIN * s.step_high, s.step_high + LONG_STEP_SLACK)


def _before_steps(s: Snapshot, budget: Budget) -> Decision:
    """Set-up, or a program that has made no step yet: a share of the grace, then the fraction."""
    limit = max(budget.setup_share * budget.grace_seconds, budget.fraction * s.program_seconds)
    if s.recording:
        # (the debts of ``_at_step`` count here too: a set-up of Python calls, a corpus tokenized, made 300,000
        # events a CPU second, its windows' children folded 1.1-1.3 s each, and stops that waited for them spent
        # 3.5 s of the grace before the first step)
        if s.cost + s.fold_wait + s.turnover_wait > limit:
            return Decision(Action.CLOSE, "before the first step: its share of the budget is spent", True)
        if s.fold_due and s.folding:  # (a turnover now would wait for the last window's child at its stop)
            return Decision(Action.NOTHING, "before the first step: the window folds once the last one has")
        return _keep(s, "before the first step: within its share of the budget")
    if s.cost + s.window_fixed + s.fold_wait + s.rate * MIN_WINDOW <= limit:
        return Decision(Action.OPEN, "before the first step: within its share of the budget")
    return Decision(Action.NOTHING, "before the first step: its share of the budget is spent", True)


def _step_estimate(s: Snapshot) -> float:
    """The next step's length. Before one was measured an open window goes on (the next step measures it),
    but none opens blind: the step may be as long as the program so far (an LBFGS step can be all of it)."""
    if s.step_seconds is not None:
        return s.step_seconds
    return 0.0 if s.recording else s.program_seconds


def _owed(s: Snapshot, budget: Budget) -> bool:
    """One of the first whole steps, one step costs less than the grace to record, and the cost stays within
    twice the allowance (what a run with steps too long for the budget may overrun it by)."""
    step_cost = _step_estimate(s) * s.rate
    return (
        s.whole_steps < budget.whole_steps
        and step_cost <= budget.grace_seconds
        and s.cost + step_cost <= OWED_CAP * budget.allowance(s.program_seconds)
    )


def _outgrown(s: Snapshot) -> bool:
    """Is the open window ``RATE_REACH`` times longer (CPU) than any window its rate was measured on?"""
    return s.recording and s.rate_reach > 0 and s.window_cpu > RATE_REACH * s.rate_reach


def _bets_too_much(s: Snapshot, budget: Budget) -> bool:
    """Has the open window outgrown the windows its rate was measured on (``RATE_REACH``), or does its projected cost
    pass ``BET_SHARE`` of what the allowance leaves beside the windows already closed (a window folding inline)?
    The projection is a rate measured on other windows; turned over at a step boundary (the session then asks again
    before the next window opens, where the window folded inline), a step is never cut by what the measurement
    finds."""
    if s.folding:  # (the last window's cost is still to come in, and a stop now would wait for its child)
        return False
    if _outgrown(s) and s.window_cost >= REACH_SHARE * budget.allowance(s.program_seconds):
        return True
    if not s.recording or s.window_cost <= 0 or s.turnover_wait > 0:
        # (a window that would fold in a child: its cost is known only once the child is done, and the next
        # window's stop waits for it; on 2-ms steps such turnovers stopped 0.9 s of torch's own work each, and the
        # waits ended the run 3.2-3.8 s on the 3-s grace in 6 of 6 runs)
        return False
    left = budget.allowance(s.program_seconds) - (s.cost - s.window_cost)
    return s.window_cost > BET_SHARE * left


def _at_step(s: Snapshot, budget: Budget) -> Decision:
    if not s.recording and s.sampled and (s.folding or s.fold_wait > 0) and not _owed(s, budget):
        # the last window's cost is known only once its child is done (its close was projected: nanoGPT-200's was
        # 0.4 s dearer than it came to), and a window stopped before then waits for the child: re-opened at the
        # budget's edge meanwhile, short windows overran the grace in 2 of 4 runs (own cost 3.02 and 3.28 s on 3.0 s)
        return Decision(Action.NOTHING, "the budget is known once the last window has folded", True)
    step = _step_estimate(s)
    if s.step_high is not None:  # (a step that overruns what was allowed for it is cut: see decide)
        step = max(step, STEP_MARGIN * s.step_high)
    # stopping a window after this step waits for the last window's fold if that is still running (at the budget's
    # edge windows are short), and a window opened now costs its fixed part besides. An open window pays that wait
    # whenever it stops (closing it sooner saves nothing of it), but the wait is paid: left out, a 0.78-s window of
    # 2-ms steps recorded on to the budget's edge and its stop waited 0.4-1.5 s for the child before it
    # An open window a child would fold is a debt besides: a program that ends after this step waits for that child
    # (or folds the window in its own time): on 2-ms steps the last window's child outlived the program by 1.3-3.2 s
    extra = max(s.fold_wait - step, 0.0) + (s.turnover_wait if s.recording else s.window_fixed)
    fits = _step_fits(s, budget, step, extra)
    if fits and s.recording and not _turnover_fits(s, budget, step) and not _owed(s, budget):
        # (the window records on unturned: its stop then waits for no child, and its fold is projected in)
        return Decision(Action.NOTHING, "one more whole step fits the budget; a turnover would wait past it")
    if fits and _bets_too_much(s, budget) and _turnover_fits(replace(s, fold_due=True), budget, step):
        return Decision(
            Action.TURN_OVER, "one more whole step fits the budget; the window turns over to measure its cost"
        )
    if fits or _owed(s, budget):
        why = "one more whole step fits the budget" if fits else "one of the first whole steps"
        return _keep(s, why) if s.recording else Decision(Action.OPEN, why)
    if s.recording and _outgrown(s) and not s.folding and s.turnover_wait <= 0:
        # (projected from windows a quarter of its length or less: the README example's set-up windows, 0.1 s of
        # CPU, priced its steps' 0.9-s window at 1.8 s where it cost 0.2, and beside a busy neighbour the run
        # recorded 3 or 4 of its 5 steps. Only a window that folds inline anyway: one a child would fold costs its
        # fold besides, here and now, twice its stop: a 0.77-s window of 2-ms steps took 4.2 s)
        why = "the next step would overrun the budget as projected from far shorter windows: measuring this one"
        return Decision(Action.TURN_OVER, why, measure=True)
    why = "the next step would overrun the budget"
    return Decision(Action.CLOSE if s.recording else Action.NOTHING, why, True)
