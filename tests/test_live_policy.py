"""The live recording policy (a pure function of a snapshot), the step log and the accounts, with literal
snapshots and a fake clock: every pattern of the live matrix as a sequence of checkpoints."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kernelscope.collect.accounts import Accounts, Spend, StepLog
from kernelscope.collect.options import LiveOptions
from kernelscope.collect.plan import Plan
from kernelscope.collect.policy import Action, Budget, Snapshot, decide

BUDGET = Budget(0.1, grace_seconds=3.0)


def act(**kw: object) -> Action:
    return decide(Snapshot(**kw), BUDGET).action  # type: ignore[arg-type]


# --- the decision ---------------------------------------------------------------------------------------


def test_blocked_or_unwanted_closes_and_never_opens() -> None:
    for kw in ({"blocked": "torch.compile is compiling"}, {"plan_wants": False}):
        assert act(recording=True, **kw) is Action.CLOSE
        assert act(recording=False, **kw) is Action.NOTHING
    off = Budget(0.0)
    assert decide(Snapshot(recording=False, steps=5, cost=1e9), off).action is Action.OPEN
    assert decide(Snapshot(recording=True, steps=5, cost=1e9, fold_due=True), off).action is Action.TURN_OVER


def test_set_up_gets_a_share_of_the_grace_then_waits_for_a_step() -> None:
    share = BUDGET.setup_share * BUDGET.grace_seconds
    assert act(recording=False) is Action.OPEN
    assert act(recording=True, cost=share - 0.1) is Action.NOTHING
    assert act(recording=True, cost=share - 0.1, fold_due=True) is Action.TURN_OVER
    d = decide(Snapshot(recording=True, cost=share + 0.1), BUDGET)
    assert d.action is Action.CLOSE and d.held and "first step" in d.reason
    assert act(recording=False, cost=share + 0.1) is Action.NOTHING
    # a program with no steps at all is sampled by time once its own time grows past the share
    assert act(recording=False, cost=share + 0.1, program_seconds=20.0 * share, rate=1.0) is Action.OPEN


def test_a_window_opens_only_at_a_step_boundary_once_the_run_is_sampled() -> None:
    held = {"recording": False, "steps": 10, "whole_steps": 3, "sampled": True, "rate": 2.0, "step_seconds": 0.5}
    assert act(**held, cost=3.0, program_seconds=10.0) is Action.NOTHING  # mid-step: never a fragment
    assert act(**held, cost=3.0, program_seconds=10.0, at_step=True) is Action.NOTHING  # 3 + 1 > 3.05
    assert act(**held, cost=3.0, program_seconds=50.0, at_step=True) is Action.OPEN  # 4 <= 5.05
    # a step that fits is recorded on; one that would overrun closes the window at the boundary
    rec = {**held, "recording": True, "at_step": True}
    assert act(**rec, cost=3.0, program_seconds=50.0) is Action.NOTHING
    d = decide(Snapshot(**rec, cost=3.0, program_seconds=10.0), BUDGET)  # type: ignore[arg-type]
    assert d.action is Action.CLOSE and d.held


def test_at_the_budgets_edge_a_window_opens_with_room_for_its_longest_step_and_its_fixed_cost() -> None:
    """nanoGPT, 200 steps: one-step windows at the edge closed 0.2 s dearer than projected (the wait for the last
    window's child, the fixed cost of a close) and one step longer than the median was cut inside: own cost 3.14 s
    against the 3.0-s grace, a step in part."""
    edge = {"recording": False, "at_step": True, "steps": 40, "whole_steps": 30, "sampled": True, "rate": 1.0}
    edge |= {"cost": 2.8, "program_seconds": 4.0, "step_seconds": 0.06}
    assert act(**edge) is Action.OPEN  # 2.8 + 0.06 <= 0.97 x 3.0
    assert act(**edge, step_high=0.09) is Action.NOTHING  # 2.8 + 1.25 x 0.09 > 0.97 x 3.0
    assert act(**edge, window_fixed=0.1) is Action.NOTHING
    # the last window still folds beside the program: stopping this one after the step would wait 0.2 s more
    assert act(**edge, fold_wait=0.3) is Action.NOTHING
    assert act(**{**edge, "cost": 2.5, "sampled": False}, fold_wait=0.3) is Action.OPEN  # (away from the edge: it fits)
    # an open one pays that wait whenever it stops: recording on pays the step besides, so it closes here (on 2-ms
    # steps a window recorded on to the edge with the wait left out, and its stop waited 0.4-1.5 s past the grace)
    assert act(**{**edge, "recording": True}, fold_wait=0.3) is Action.CLOSE
    assert act(**{**edge, "recording": True, "cost": 2.5}, fold_wait=0.3) is Action.NOTHING
    # (the fixed cost of an open window is in its projected cost already)
    assert act(**{**edge, "recording": True}, window_fixed=0.1) is Action.NOTHING


def test_an_open_window_a_child_would_fold_leaves_room_for_its_fold() -> None:
    """A program that ends after the next step waits for the open window's child (or folds it in its own time): on
    2-ms steps with one torch thread the last window's child outlived the program by 1.3-3.2 s, own cost 4.0-5.9 s on
    the 3-s grace."""
    rec = {"recording": True, "at_step": True, "steps": 400, "whole_steps": 300, "rate": 2.0, "step_seconds": 0.002}
    rec |= {"cost": 2.0, "program_seconds": 3.0, "window_cost": 0.4, "window_cpu": 0.5, "rate_reach": 0.3}
    assert act(**rec) is Action.NOTHING  # folded inline: its projected cost is all of it
    assert act(**rec, turnover_wait=0.5) is Action.NOTHING  # 2.0 + 0.5 fits 0.97 x 3.0
    d = decide(Snapshot(**rec, turnover_wait=1.0), BUDGET)  # type: ignore[arg-type]
    assert d.action is Action.CLOSE and d.held  # 2.0 + 1.0 does not


def test_a_sampled_run_opens_no_window_before_the_last_one_has_folded() -> None:
    """The last window's cost is known once its child is done (its close was projected), and a window stopped
    before then waits for that child: nanoGPT-200 re-opened at the budget's edge while a child folded, and the short
    window's close overran the grace in 2 of 4 runs (own cost 3.02 and 3.28 s on 3.0 s)."""
    held = {"recording": False, "at_step": True, "steps": 60, "whole_steps": 50, "sampled": True, "rate": 0.8}
    held |= {"cost": 2.5, "program_seconds": 4.5, "step_seconds": 0.06, "step_high": 0.065}
    assert act(**held) is Action.OPEN  # 2.5 + 1.25 x 0.065 x 0.8 fits 0.97 x 3.0
    d = decide(Snapshot(**held, fold_wait=0.05), BUDGET)  # type: ignore[arg-type]
    assert d.action is Action.NOTHING and d.held and d.reason == "the budget is known once the last window has folded"
    assert act(**{**held, "sampled": False}, fold_wait=0.05) is Action.OPEN  # (not held back before: it fits)
    assert act(**{**held, "whole_steps": 1}, fold_wait=0.05) is Action.OPEN  # (an owed whole step)
    assert act(**{**held, "recording": True}, fold_wait=0.05) is Action.NOTHING  # (an open window records on)
    # a child folding past its estimated end (the estimate reads 0) is still folding
    assert act(**held, folding=True, fold_wait=0.0) is Action.NOTHING


def test_a_window_is_turned_over_only_where_the_next_ones_wait_for_its_fold_fits_the_budget() -> None:
    """A window turned over forks a child for the one before, and the new window's stop waits for it: turned over
    at the budget's edge, nanoGPT-200's last short window waited 0.23-0.28 s at its stop (own cost 3.1-3.2 s on the
    3.0-s grace, 2 of 3 runs). There the window records on unturned instead: its stop then waits for no child."""
    due = {"recording": True, "fold_due": True, "steps": 40, "whole_steps": 30, "rate": 0.7, "window_fixed": 0.09}
    due |= {"cost": 2.6, "program_seconds": 4.0, "step_seconds": 0.06, "step_high": 0.065}
    at_step = {**due, "at_step": True}
    assert act(**at_step) is Action.TURN_OVER  # folds inline (no wait): 2.6 + 0.08 x 0.7 fits
    assert act(**at_step, turnover_wait=0.1) is Action.TURN_OVER  # 2.6 + 0.09 + 0.02 + 0.06 fits 0.97 x 3.0
    # 2.42 + 0.4 (its own fold, whenever it stops) + 0.06 fits; turned over, the next stop waits 0.15 + 0.32 more
    near = {**at_step, "cost": 2.42, "window_fixed": 0.15}
    d = decide(Snapshot(**near, turnover_wait=0.4), BUDGET)  # type: ignore[arg-type]
    assert d.action is Action.NOTHING and not d.held and "turnover would wait" in d.reason  # records on
    assert act(**at_step, turnover_wait=0.4) is Action.CLOSE  # 2.6 + 0.4: its own fold no longer fits
    assert act(**due, turnover_wait=0.4) is Action.NOTHING  # nor inside a step (the boundary decides)
    assert act(**due, turnover_wait=0.1) is Action.TURN_OVER
    assert act(**{**at_step, "cost": 1.0}, turnover_wait=0.4) is Action.TURN_OVER  # far from the edge
    assert act(**{**at_step, "whole_steps": 1}, turnover_wait=0.4) is Action.TURN_OVER  # an owed whole step
    off = Budget(0.0)
    assert decide(Snapshot(**at_step, turnover_wait=9.0), off).action is Action.TURN_OVER  # (no budget)


def test_an_open_window_records_on_only_with_room_for_its_longest_step() -> None:
    """With the margin on opening only, an open window went on at the median step and was cut inside the next,
    longer one (nanoGPT-200, 2 of 9 runs): a step in part."""
    edge = {"recording": True, "at_step": True, "steps": 60, "whole_steps": 50, "sampled": True, "rate": 1.0}
    edge |= {"cost": 2.8, "program_seconds": 4.0, "step_seconds": 0.06}
    assert act(**edge) is Action.NOTHING  # records on: 2.8 + 0.06 <= 0.97 x 3.0
    assert act(**edge, step_high=0.09) is Action.CLOSE  # 2.8 + 1.25 x 0.09 > 0.97 x 3.0


def test_a_window_betting_more_than_a_third_of_what_is_left_turns_over_at_a_step_boundary() -> None:
    """What a recorded second costs moves with the program (tiny_steps.py: a 1-s window cost 1.6x a CPU second what
    the 0.26-s window before it did, and ended 0.5 s past the grace): a window whose projection passes a third of
    what the allowance leaves turns over at a boundary, where its real cost decides the next step, never inside."""
    edge = {"recording": True, "at_step": True, "steps": 200, "whole_steps": 150, "rate": 2.0}
    edge |= {"program_seconds": 2.0, "step_seconds": 0.002, "step_high": 0.002}
    # 2.0 s spent before the window, 0.4 s projected for it: 1.0 s left, a third is 0.33
    assert act(**edge, cost=2.4, window_cost=0.4) is Action.TURN_OVER
    assert act(**edge, cost=2.3, window_cost=0.3) is Action.NOTHING  # within a third: records on
    assert act(**edge, cost=2.4) is Action.NOTHING  # (no window cost stated: the closed windows' alone)
    assert act(**edge, cost=2.4, window_cost=0.4, turnover_wait=0.2) is Action.NOTHING  # (it would fold in a child)
    assert act(**edge, cost=2.4, window_cost=0.4, folding=True) is Action.NOTHING  # (the last one's cost to come)
    mid = {**edge, "at_step": False}
    assert act(**mid, cost=2.4, window_cost=0.4) is Action.NOTHING  # never inside a step
    off = Budget(0.0)
    assert decide(Snapshot(**edge, cost=2.4, window_cost=0.4), off).action is Action.NOTHING  # (no budget)


def test_the_fixed_cost_of_a_close_is_the_intercept_of_the_steps_windows() -> None:
    a = Accounts(BUDGET, clock=FakeClock(), cpu_clock=FakeCPU())
    a.steps_began()
    for cpu in (0.1, 0.5, 1.0):  # closing costs 0.15 s plus 0.6 s a CPU second recorded
        a.window_closed(window=cpu, cpu=cpu, events=0, op_seconds=cpu, closing=Spend(0.0, 0.15 + 0.6 * cpu))
    assert a.close_fixed == pytest.approx(0.15)
    assert a.projected(0.5) == pytest.approx(a.cost + 0.15 + 0.5 * a.rate)


def test_a_window_a_child_folds_prices_the_next_at_least_at_its_stop() -> None:
    """A child's result comes in only once it is done (1-1.4 s on 2-ms steps): until then the rate is at least what
    the window's stop cost a CPU second, where that is dearer than the windows before it; then it is measured."""
    a = Accounts(BUDGET, clock=FakeClock(), cpu_clock=FakeCPU())
    a.steps_began()
    a.window_closed(window=0.1, cpu=0.1, events=0, op_seconds=0.1, closing=Spend(0.2, 0.2))  # a warm-up window
    assert a.rate == pytest.approx(2.0)
    a.window_stopped(cpu=0.3, closing=Spend(0.9, 0.9), fixed=0.0)  # its stop alone: 3.0 a CPU second
    assert a.rate == pytest.approx(3.0)
    a.window_closed(window=0.3, cpu=0.3, events=0, op_seconds=0.3, closing=Spend(1.2, 1.2))  # its child is done
    assert a.rate == pytest.approx(4.0)  # (the last window's, dearer than the mean)
    a.window_stopped(cpu=0.3, closing=Spend(0.3, 0.3), fixed=0.0)  # a cheaper stop does not lower it
    assert a.rate == pytest.approx(4.0)
    a.window_stopped(cpu=0.01, closing=Spend(5.0, 5.0), fixed=0.0)  # nor does a window too short to tell raise it
    assert a.rate == pytest.approx(4.0)


def test_the_first_whole_steps_are_owed_when_one_step_fits_the_grace() -> None:
    owed = {"recording": True, "at_step": True, "steps": 1, "cost": 2.9, "rate": 2.0, "step_seconds": 1.0}
    assert act(**owed, whole_steps=0) is Action.NOTHING  # 2.9 + 2 > 3, but one of the first three
    assert act(**owed, whole_steps=3) is Action.CLOSE
    assert act(**{**owed, "step_seconds": 2.0}, whole_steps=0) is Action.CLOSE  # one step costs 4 s > grace


def test_inside_a_step_the_window_is_cut_once_the_cost_passes_the_allowance() -> None:
    """The allowance is what the header promises: max(grace, fraction x program time)."""
    mid = {"recording": True, "steps": 4, "whole_steps": 3, "program_seconds": 10.0}
    assert act(**mid, cost=2.9) is Action.NOTHING
    d = decide(Snapshot(**mid, cost=3.1), BUDGET)  # type: ignore[arg-type]
    assert d.action is Action.CLOSE and "inside" in d.reason


def test_a_window_far_longer_than_any_measured_turns_over_at_a_step_boundary() -> None:
    """A rate measured on the first steps' window (the program's warm-up: 2-ms steps that took 20 ms) priced a 1.3-s
    window of steady steps at two thirds of its cost: a window 4x longer (CPU) than any the rate was measured on
    turns over at a boundary, where that fits, once its projection is a tenth of the allowance."""
    early = {"recording": True, "at_step": True, "steps": 100, "whole_steps": 90, "rate": 2.0, "cost": 0.8}
    early |= {"program_seconds": 2.0, "step_seconds": 0.002, "step_high": 0.002, "window_cost": 0.5}
    assert act(**early, window_cpu=0.25, rate_reach=0.05) is Action.TURN_OVER
    assert act(**early, window_cpu=0.15, rate_reach=0.05) is Action.NOTHING  # within 4x
    assert act(**{**early, "window_cost": 0.2}, window_cpu=0.25, rate_reach=0.05) is Action.NOTHING  # cheap yet
    assert act(**early, window_cpu=0.25, rate_reach=0.0) is Action.NOTHING  # (the rate is assumed: no reach)
    # a window whose child would fold past the budget closes (its fold is paid whenever it stops)
    assert act(**early, window_cpu=0.25, rate_reach=0.05, turnover_wait=2.5) is Action.CLOSE
    assert act(**early, window_cpu=0.25, rate_reach=0.05, turnover_wait=0.5) is Action.TURN_OVER


def test_a_window_that_would_close_on_a_projection_from_far_shorter_windows_is_measured_first() -> None:
    """The README example's set-up windows (0.1 s of CPU) priced its steps' 0.9-s window at 1.8 s where it cost 0.2:
    beside a busy neighbour it closed after 3 or 4 of 5 steps. Such a window turns over, folded here and now, and the
    session asks again with its cost measured."""
    edge = {"recording": True, "at_step": True, "steps": 3, "whole_steps": 3, "rate": 1.7, "cost": 1.83}
    edge |= {"program_seconds": 2.7, "step_seconds": 0.34, "step_high": 0.57, "window_cost": 1.5}
    d = decide(Snapshot(**edge, window_cpu=0.9, rate_reach=0.11), BUDGET)  # type: ignore[arg-type]
    assert d.action is Action.TURN_OVER and d.measure and not d.held
    assert act(**edge, window_cpu=0.9, rate_reach=0.3) is Action.CLOSE  # (measured on a window near its length)
    assert act(**edge, window_cpu=0.9, rate_reach=0.11, folding=True) is Action.CLOSE  # (a child's cost to come)


def test_a_step_of_its_usual_length_is_not_cut_when_the_cost_passes_the_allowance() -> None:
    """Past the allowance inside a step of the usual length (a fold that came in mid-step re-measured the rate), the
    window closes at the step's end: cutting it saves at most one step's cost and leaves a step in part. A step
    running past the longest recent one (1.25x, and 0.05 s) is cut: one step costs more to record than the budget allows."""
    mid = {"recording": True, "steps": 400, "whole_steps": 300, "program_seconds": 10.0, "cost": 3.1}
    mid |= {"step_seconds": 0.002, "step_high": 0.003}
    d = decide(Snapshot(**mid, in_step=0.001), BUDGET)  # type: ignore[arg-type]
    assert d.action is Action.NOTHING and d.held and "step's end" in d.reason
    assert act(**mid, in_step=0.04) is Action.NOTHING  # (within the slack past the longest step)
    assert act(**mid, in_step=0.06) is Action.CLOSE  # past it
    assert act(**{**mid, "step_high": None}, in_step=0.001) is Action.CLOSE  # (a step of unknown length)
    assert act(**{**mid, "at_step": True}, in_step=0.0) is Action.CLOSE  # and at its end the window closes


def test_no_window_opens_blind_on_a_step_of_unknown_length() -> None:
    """At the first step boundary no step was measured: an open window goes on, but a closed one opens only
    if a step as long as the run so far fits (an LBFGS step can be the whole program)."""
    first = {"at_step": True, "steps": 1, "whole_steps": 0, "program_seconds": 2.0, "rate": 3.0, "cost": 2.5}
    assert act(**first, recording=True) is Action.NOTHING  # (goes on)
    assert act(**first, recording=False) is Action.NOTHING
    assert act(**{**first, "cost": 0.2, "program_seconds": 0.5}, recording=False) is Action.OPEN
    assert act(**first, recording=False, step_seconds=0.05) is Action.OPEN  # a measured short step fits


def test_a_short_run_is_recorded_whole_under_the_grace() -> None:
    """A run whose whole recording costs less than the grace: the policy never closes a window."""
    log, cost, recording = StepLog(), 0.0, False
    log.started()
    for step in range(6):
        for _ in range(3):  # checkpoints inside the step
            d = decide(Snapshot(recording=recording, steps=log.steps, whole_steps=log.whole_count, cost=cost), BUDGET)
            assert d.action in (Action.OPEN, Action.NOTHING, Action.TURN_OVER), (step, d)
            recording = True
            cost += 0.1
        log.boundary(recording)
    log.end(recording)
    assert log.whole_count == 6 and log.before_first == "whole" and log.partial == 0


# --- the step log -----------------------------------------------------------------------------------


def test_a_step_is_whole_only_when_recorded_from_boundary_to_boundary() -> None:
    log = StepLog()
    log.started()
    log.opened()
    log.boundary(recording=True)  # before the first step: whole
    log.boundary(recording=True)  # step 1 whole
    log.closed()
    log.boundary(recording=False)  # step 2 in part
    log.boundary(recording=False)  # step 3 not recorded
    log.opened()
    log.boundary(recording=True)  # step 4: opened mid-step: in part
    log.boundary(recording=True)  # step 5 whole
    log.closed(pause=True)  # a compile: its work is not the step's ...
    log.opened()  # ... and recording went on after it
    log.boundary(recording=True)  # step 6 whole
    log.closed(pause=True)
    log.boundary(recording=False)  # step 7: the pause never ended: in part
    log.end(recording=False)
    assert log.before_first == "whole" and log.whole == [1, 5, 6] and log.partial == 3
    assert log.whole_count == 4 and log.tail == "none"
    assert log.describe()["whole_steps"] == [[1, 1], [5, 6]]


def test_the_steps_of_a_lost_window_are_in_part_at_most() -> None:
    log = StepLog()
    log.started()
    log.opened()
    log.boundary(recording=True)  # before the first step: whole
    log.opened()  # a turnover (no gap) inside step 1 ...
    log.boundary(recording=True)  # step 1 whole so far
    log.boundary(recording=True)  # step 2 whole so far
    log.lost()  # ... but torch could not post-process that window (torch_compat.stop_profiler)
    log.opened()  # the next turnover
    log.boundary(recording=True)  # step 3: its start was in the lost window
    log.boundary(recording=True)  # step 4 whole
    log.end(recording=True)
    assert log.before_first == "whole" and log.whole == [4] and log.partial == 3


def test_without_steps_the_whole_run_is_before_the_first_step() -> None:
    log = StepLog()
    log.started()
    log.opened()
    log.end(recording=True)
    assert (log.before_first, log.tail, log.whole_count) == ("whole", "none", 0)


# --- the accounts ---------------------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class FakeCPU(FakeClock):
    pass


def test_program_time_is_wall_time_less_kernelscopes_cost_and_never_less_than_its_ops() -> None:
    clock, cpu = FakeClock(), FakeCPU()
    a = Accounts(BUDGET, clock=clock, cpu_clock=cpu)
    with a.spending() as opening:  # opening a window
        clock.now += 0.01
        cpu.now += 0.01
    clock.now += 1.0  # the window: 1 s of wall, 0.5 s of CPU (the program waited for data half of it)
    cpu.now += 0.5
    with a.spending() as closing:
        clock.now += 2.0
        cpu.now += 2.0
    # ops took 0.4 s: the recording estimate (1e6 events) is at most the 0.1 s of CPU outside them
    a.window_closed(window=1.0, cpu=0.5, events=1_000_000, op_seconds=0.4, closing=closing, fixed=opening.cpu)
    assert a.cost == pytest.approx(0.01 + 2.0 + 0.1) and a.cost_cpu == pytest.approx(0.01 + 2.0 + 0.1)
    assert a.recorded == pytest.approx(0.9)
    assert a.rate == pytest.approx((0.1 + 2.0 - 0.01) / 0.5)  # per CPU second recorded
    assert a.projected(0.25) == pytest.approx(a.cost_cpu + 0.01 + 0.25 * a.rate)
    a.end()
    cov = a.coverage(StepLog())
    assert cov["program_seconds"] == pytest.approx(3.01 - 2.11)
    assert cov["program_cpu_seconds"] == pytest.approx(2.51 - 2.11)
    assert cov["program_seconds"] >= cov["recorded_seconds"] >= 0.4


def test_once_steps_were_measured_the_rate_is_theirs() -> None:
    """A set-up of Python calls (word_lm tokenizing its corpus: 1 s to stop a 0.1-s window) must not price the
    steps: the run's mean held word_lm's steps back at ten times their cost for dozens of steps."""
    a = Accounts(BUDGET, clock=FakeClock(), cpu_clock=FakeCPU())

    def window(cpu: float, closing_cpu: float) -> None:
        a.window_closed(window=cpu, cpu=cpu, events=0, op_seconds=cpu, closing=Spend(closing_cpu, closing_cpu))

    window(0.1, 1.0)  # set-up
    assert a.rate == pytest.approx(10.0)
    a.steps_began()
    assert a.rate == pytest.approx(10.0)  # (no step measured yet: the set-up's rate, not a guess)
    window(0.2, 0.1)
    assert a.rate == pytest.approx(0.5)  # the steps' own
    window(0.2, 0.3)
    assert a.rate == pytest.approx(1.5)  # the dearer of their mean and the last one


def test_windows_with_shapes_and_without_are_priced_apart() -> None:
    """The shape sample's windows cost about twice a plain one's stop: the first plain window, priced at the sample's
    rate, was projected at 1.35-1.52 a CPU second where plain windows cost 0.58-0.76 (nanoGPT)."""
    from kernelscope.collect.accounts import PLAIN_PER_SHAPED

    a = Accounts(BUDGET, clock=FakeClock(), cpu_clock=FakeCPU())
    a.steps_began()

    def window(cpu: float, closing_cpu: float, shapes: bool) -> None:
        a.window_closed(
            window=cpu, cpu=cpu, events=0, op_seconds=cpu, closing=Spend(closing_cpu, closing_cpu), shapes=shapes
        )

    a.shaping = True
    window(0.2, 0.3, shapes=True)  # the sample
    assert a.rate == pytest.approx(1.5)
    a.shaping = False  # the next window records none: priced from the sample until one of its kind is measured
    assert a.rate == pytest.approx(1.5 * PLAIN_PER_SHAPED)
    a.window_stopped(cpu=0.4, closing=Spend(1.0, 1.0), shapes=True)  # a dearer sample window a child still folds:
    assert a.rate == pytest.approx(2.5 * PLAIN_PER_SHAPED)  # its floor is scaled to the kind priced too
    window(0.4, 0.2, shapes=False)
    assert a.rate == pytest.approx(0.5)  # plain windows, measured: their own rate
    a.shaping = True
    assert a.rate == pytest.approx(1.5)  # (the sample's own again, for a window that records shapes)


def test_the_budget_hold_is_counted_once_until_released() -> None:
    clock = FakeClock()
    a = Accounts(BUDGET, clock=clock)
    a.hold()
    clock.now += 1.0
    a.step()
    a.hold()
    clock.now += 1.0
    a.release()
    assert (a.holds, a.held_steps, a.held_seconds) == (1, 1, pytest.approx(2.0))


# --- the options ----------------------------------------------------------------------------------


def test_options_are_one_frozen_value_with_the_budget_they_imply() -> None:
    o = LiveOptions.make()
    assert o.budget == Budget(0.1, 3.0) and o.memory == "sample"
    assert LiveOptions.make(steps=3).budget.off  # an explicit plan records what it asks for
    assert LiveOptions.make(steps=3, max_overhead=0.2).budget.fraction == 0.2
    assert LiveOptions.make(shapes="all").memory == "all"
    assert LiveOptions.make(profile_memory=False).memory == "off"
    assert LiveOptions.make(schedule="wait=1,active=2").plan.schedule is not None
    with pytest.raises(ValueError):
        LiveOptions.make(memory="some")
    with pytest.raises(ValueError):
        LiveOptions(plan=Plan(), max_overhead=-1)
    with pytest.raises(AttributeError):
        o.shapes = "all"  # type: ignore[misc]
    assert replace(o, grace_seconds=1.0).budget.grace_seconds == 1.0
