"""Live PyTorch collection: a session that records the program in windows and folds them as it goes.

Three parts (DESIGN.md, "Live recording"):

- the **recorder** (recorder.py) opens, stops and folds windows (one torch profiler run each): mechanism;
- the **policy** (policy.py) is a pure function from a snapshot of the run to one action and its reason;
- the **accounts** (accounts.py) keep every time figure the profile states, and which steps were recorded whole.

This module holds the session: the hooks that find checkpoints (module calls, torch calls, step boundaries,
Dynamo's compiles, the program's own profiler, heavy imports), the snapshot it hands the policy at each, and
the carrying out of the decision where it is safe (safepoint.py).
"""

from __future__ import annotations

import dataclasses
import statistics
import sys
import time
from collections import defaultdict, deque
from types import FrameType
from typing import TYPE_CHECKING, Any

from ..attribute.userframes import is_program_file
from ..model import Profile
from ..model.profile import prune_empty
from ._process import sigint_deferred
from .accounts import Accounts, Spend, StepLog
from .checkpoint import Checkpoint
from .foreign import ForeignProfiler
from .heavy_imports import HEAVY, ImportWatch
from .lazy_compile import CompileEntry, LazyCompile
from .live_metadata import session_metadata
from .modules import ModuleRegistry
from .notes import session_notes, start_compile_capture
from .options import FOLD_CALLS_DEFAULT, FOLD_SECONDS_DEFAULT, LiveOptions
from .own_frames import program_frame
from .policy import Action, Decision, Snapshot, decide
from .recorder import Closed, Recorder
from .safepoint import StackSafety
from .sampling import Sampling
from .steps import StepDetector

if TYPE_CHECKING:
    from .torch_lines import Counter, LineMode, OperatorLines

__all__ = ["FOLD_CALLS_DEFAULT", "FOLD_SECONDS_DEFAULT", "Session"]

FOLD_CHECK_CALLS = 1024  # torch calls between checkpoints from the operator hook
# Until a window has been folded the cost rate is assumed: the first window turns over after this long, so
# that the budget works with the rate measured on this program (a tiny-op program costs several times more).
PROBE_SECONDS = 0.1
# While a window records, module calls and every 1024th torch call ask the policy at most this often: torch's
# Python tracer records every call kernelscope makes, and a full checkpoint is ~45 of them (a nanoGPT step had 51
# checkpoints: a quarter of the window's Python events were kernelscope's own, each paid for again by torch's
# stop). Skipped there, a checkpoint closes or turns a window over a little later, never records less; with no
# window open every call asks (a window opens at the first call it may). A step boundary, a compile's end, an
# import's end and a thread's start always ask at once. Module calls let pass make no call into the session at all:
# the module hook counts them down (``ModuleRegistry.quiet``, doubled while they come too soon, halved when late).
ROUTINE_SECONDS = 0.004
MODULE_PASS_MAX = 64  # module calls let pass at most between two asks while a window records


class Session:
    """One profile being collected. Not thread-safe; one per process (see api.py)."""

    def __init__(self, options: LiveOptions | None = None, *, argv: list[str] | None = None, **kw: Any) -> None:
        self.options = options if options is not None else LiveOptions.make(**kw)
        o = self.options
        self.plan = o.plan
        self.budget = o.budget
        self.accounts = Accounts(self.budget)
        self.log = StepLog()
        self.sampling = Sampling(o.shapes, o.memory, o.shape_seconds)
        self.scope_metrics: dict[str, deque[dict[str, float]]] = defaultdict(deque)
        self.modules = ModuleRegistry(self._on_module_call, self._on_outer_module_call)
        self.safety = StackSafety()
        self.recorder = Recorder(
            self.sampling, self.safety, self.modules.path, self.scope_metrics, background=o.fold == "background"
        )
        self.recorder.on_folded = self._folded_behind
        # the windows folding in the background (in a child, or waiting their turn), oldest first: their stops
        self._behind: deque[tuple[Spend, float, int]] = deque()
        self.step_source = StepDetector(self._count_step, self._restart_steps)
        self.imports = ImportWatch(self._import_starting)
        self.imported: list[str] = []  # the first modules imported while recording could run
        self.foreign = ForeignProfiler(
            lambda prof: getattr(prof, "_kernelscope_own", False),
            self._foreign_starting,
            self._foreign_stopped,
            self._count_step,
        )
        self.lines: LineMode | None = None  # while waiting for the first op, and for module-less programs
        self.operators: OperatorLines | None = None
        self.calls: Counter | None = None
        self.start_time = time.time()
        self.argv = list(argv if argv is not None else sys.argv)
        self.warnings = self.recorder.warnings
        self.last_decision = Decision(Action.NOTHING, "not started")
        self.deferred = 0  # window changes put off because the point was not safe
        self.compile_pauses = 0
        self._armed = o.record_from == "first-call"  # waiting for the program's own first op or module call
        self._plan_steps = 0  # steps that ended with a window open (what --steps counts)
        self._window_calls = 0
        self.checkpoint: Checkpoint | None = None  # set by `kernelscope run`: a killed run keeps its profile
        self._paused = False  # deactivate() from the API
        self._compiling = False  # torch.compile is compiling: not recorded (its events are huge)
        self._compiled = False  # torch.compile has compiled a frame (guarding on kernelscope's global hooks)
        self._finalized = False
        self._busy = False  # inside a window change: hooks fired from it are ignored
        self._at_step = False
        self._compile_watch: Any = None
        self._lazy_compile = LazyCompile(self._start_compile_capture)
        self._compile_entry = CompileEntry(self._compile_entered, self._compile_left)
        self._compile_since: int | None = None  # torch.compile compiling inside the open window since (ns)
        self._compile_entry_at = 0.0
        self._import_since: float | None = None  # stopped for an import since
        self._last_step: float | None = None
        self._step_times: deque[float] = deque(maxlen=9)  # the last steps' own CPU times, kernelscope's cost out
        self._step_cost = 0.0
        self._fresh = False
        self._step_seconds: float | None = None  # the median of the last steps' own CPU times
        self._opened = 0.0  # the CPU seconds opening the last window took
        self._broken: str | None = None  # an internal error stopped recording
        self._routine_after = 0.0  # (perf_counter) no routine checkpoint before this: ROUTINE_SECONDS
        self._module_pass = 0  # module calls let pass between asks while a window records (ModuleRegistry.quiet)

    # --- what other parts read -------------------------------------------------------------------
    @property
    def active(self) -> bool:
        return self.recorder.open

    @property
    def steps(self) -> int:
        return self.log.steps

    @property
    def recorded_steps(self) -> int:
        return self.log.whole_count

    @property
    def windows(self) -> int:
        return self.recorder.windows

    @property
    def fold_time(self) -> float:
        return self.recorder.fold_time

    @property
    def builder(self) -> Any:
        """The tree so far (complete between windows)."""
        return self.recorder.builder

    @property
    def shapes(self) -> str:
        return self.options.shapes

    @property
    def memory(self) -> str:
        return self.options.memory

    @property
    def record_from(self) -> str:
        return self.options.record_from

    # --- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> None:
        if self.options.native:
            from .native import NativeSampling

            self.recorder.folder.native = NativeSampling(self.options.native_rate)
        self.safety.install()
        self.modules.install()
        self.step_source.install()
        self.foreign.install()
        self.imports.install()
        self.recorder.threads.install(self._checkpoint)  # a thread the program starts: a checkpoint (threads.py)
        self._watch_compiles()  # only if Dynamo is loaded: importing it is costly
        self._lazy_compile.install()
        from .torch_lines import Counter, LineMode, OperatorLines

        self.calls = Counter(self._on_torch_call, every=1 if self._armed else FOLD_CHECK_CALLS)
        self.operators = OperatorLines(self.calls, self._operators_paused)
        self.operators.install()
        self.lines = LineMode(self.calls)
        self.lines.__enter__()  # type: ignore[no-untyped-call]
        if not self._armed:
            self._begin()
            self._checkpoint()

    def _begin(self) -> None:
        """Recording may begin from here: the program's time is counted from this point in every run."""
        self.accounts.begin()
        self.log.started()
        self._fresh = True  # the checkpoint that follows opens the first window, or the set-up has a gap

    def _watch_compiles(self) -> None:
        """Hook Dynamo's compile callbacks once Dynamo is loaded (the program compiles, or imported it)."""
        if self._compile_watch is None and "torch._dynamo" in sys.modules:
            from .compile.watch import CompileWatch  # (the compile package loads only with Dynamo)

            self._compile_watch = CompileWatch(self._compile_started, self._compile_ended)
            self._compile_watch.install()

    def _start_compile_capture(self) -> None:
        """The program is about to use torch.compile (lazy_compile.py): hook Dynamo and Inductor in, with
        no window open (their imports would be recorded)."""
        if self.recorder.open:
            with sigint_deferred():
                self._close(pause=True)
            self._reopen_soon()
        busy, self._busy = self._busy, True  # its imports run torch code: no window opens for them
        t0 = time.perf_counter()
        try:
            import torch._dynamo  # noqa: F401  (torch.compile imports it next anyway)

            self._watch_compiles()
            self._compile_entry.install()
            if self.options.compile_capture:
                self.recorder.compile = start_compile_capture(self.warnings)
                if self.recorder.compile is not None:
                    from ..attribute.compiled_placer import CapturePlacer

                    self.recorder.folder.set_placer(CapturePlacer(self.recorder.compile))
        finally:
            self._busy = busy
            if not self._armed:  # Inductor's imports (its first compile's, early), once recording could begin
                self.accounts.compile_seconds += time.perf_counter() - t0

    def activate(self) -> None:
        """API: resume recording (at this point, if it is safe; else at the next safe point)."""
        self._paused = False
        if self._armed:
            self._armed = False
            self._begin()
        self._checkpoint()

    def deactivate(self) -> None:
        """API: pause recording. Stopping is always safe."""
        self._paused = True
        with sigint_deferred():  # a Ctrl-C mid-fold would lose the window's events
            self._close()

    def step(self) -> None:
        """The program's own step boundary (``kernelscope.step()``): from now on the only steps counted."""
        self.step_source.explicit()
        self._count_step()

    def _restart_steps(self) -> None:
        """Another step source won (steps.py): the steps counted so far were parts of its first step."""
        self.log.restart(self.recorder.open)
        self.sampling.step(recording=False)  # (the sample's steps are the new source's)
        self._plan_steps = 0
        self._step_times.clear()  # the new source's steps are another kind of step
        self._step_seconds = None

    def _count_step(self) -> None:
        step = self._in_step()
        if step is not None:
            self._step_times.append(step)
            self._step_seconds = statistics.median(self._step_times)
        self._last_step, self._step_cost = time.process_time(), self.accounts.own.cpu
        if self._armed:
            self._armed = False
            self._begin()
        if self.recorder.open:
            self._plan_steps += 1
        self.log.boundary(self.recorder.open)
        self.sampling.step(self.recorder.open)
        self.accounts.step()
        self.accounts.steps_began()
        self._at_step = True
        try:
            self._checkpoint()
        finally:
            self._at_step = False

    # --- hooks -------------------------------------------------------------------------------------
    def _on_torch_call(self) -> None:
        if self._armed:
            # the program's first op: one called while the program's code runs (module construction
            # included), not an import-time op of a library the program imports
            if not _program_running(program_frame()):
                return
            self._armed = False
            self._begin()
            if self.calls is not None:
                self.calls.rearm(FOLD_CHECK_CALLS)
        elif self.recorder.prof is not None:
            if time.perf_counter() < self._routine_after:  # (inline: inside a window each call is recorded)
                return
        elif self._idle_inside_step():
            return
        self._checkpoint()

    def _on_module_call(self) -> None:
        """A module call (outside any torch function call): the safe place to drop the LineMode, once
        module calls and operators can drive the checkpoints (it costs a Python call per torch call)."""
        if self.operators is not None and self.operators.paused:  # (an optimizer step that raised: no post hook)
            self.operators.resume()
        if self.lines is not None and not self._armed:
            from torch.overrides import _get_current_function_mode_stack

            stack = _get_current_function_mode_stack()  # type: ignore[no-untyped-call]
            if stack and stack[-1] is self.lines:  # never pop a mode the program pushed after ours
                self.lines.__exit__(None, None, None)  # type: ignore[no-untyped-call]
                self.lines = None
        if self._armed:
            self._armed = False
            self._begin()
        elif self.recorder.prof is not None:
            now = time.perf_counter()  # (inline: inside a window each call is recorded)
            if now < self._routine_after:  # asked too soon: let more module calls pass before the next ask
                self._module_pass = min(2 * self._module_pass + 1, MODULE_PASS_MAX)
                self.modules.quiet = self._module_pass
                return
            if now > self._routine_after + ROUTINE_SECONDS:  # asked late: fewer
                self._module_pass //= 2
            self._checkpoint()
            if self.recorder.prof is not None and self._routine_after > 0.0:
                self.modules.quiet = self._module_pass
            return
        elif self._idle_inside_step():
            return
        self._checkpoint()

    def _idle_inside_step(self) -> bool:
        """With no window open, may a module call or torch call skip the policy? Inside a step of a sampled run
        (the budget holds recording back and windows open only at step boundaries: the policy can only say
        "nothing" there), unless an import's end is still to be counted. (While a window records, the callers
        skip it if it asked less than ROUTINE_SECONDS ago.)"""
        return (
            self.accounts.held
            and self.log.steps > 0
            and self._import_since is None
            and not self._paused
            and not self.foreign.active
        )

    def _on_outer_module_call(self, module: Any) -> None:
        if self.step_source.source in ("optimizer", "explicit"):  # (they win over module calls for good)
            self.modules.no_outer_calls(remove=not self._compiled)
            return
        self.step_source.outer_module_called(id(module))

    def _reopen_soon(self) -> None:
        """A window was stopped for something that is over soon (an import, a compile): ask at every torch
        call from Python, not every 1024th, until one opens (_open sets it back)."""
        if self.calls is not None:
            self.calls.rearm(1)

    def _import_starting(self, name: str) -> None:
        """The program imports a module (heavy_imports.py): not recorded."""
        if self._armed or self._finalized or self._busy:
            return  # (the program's own imports before its first op, or kernelscope's while it changes windows)
        outermost = not self.imports.nested
        if outermost and len(self.imported) < 5 and not any(name.startswith(n + ".") for n in self.imported):
            self.imported.append(name)
        if self.recorder.open and not self._busy and name not in HEAVY and not self.safety.can_turn_over():
            return  # inside torch code that may hold the window's state: recording goes on (a small import)
        if self._import_since is None:
            self._import_since = time.perf_counter()  # up to the end of the imports
        if self.recorder.open and not self._busy:
            with sigint_deferred():
                self._close(pause=True)
            if not self.recorder.open:
                self._reopen_soon()

    def _foreign_starting(self) -> None:
        """The program starts its own torch.profiler (foreign.py): step aside."""
        if self.recorder.open:
            with sigint_deferred():
                self._close()
        if self.recorder.open:  # inside backward(): it cannot stop there; the program's start will fail
            self.warnings.append("the program started torch.profiler inside backward() while kernelscope recorded")

    def _foreign_stopped(self, prof: Any) -> None:
        """The program stopped its own profiler: fold what it recorded, then record again when safe."""
        self.safety.stopped()
        if self._finalized or self._paused or getattr(prof, "kineto_results", None) is None:
            return
        self._busy = True
        try:
            with sigint_deferred():
                self.modules.resolve()
                with self.accounts.spending():
                    self.recorder.fold_foreign(prof)
        finally:
            self._busy = False
        self._checkpoint()

    def _compile_started(self) -> None:
        """Compiling records millions of Python events and is not the program's steady state: stop the
        window when torch.compile starts (stopping is safe anywhere)."""
        self._compiling = self._compiled = True
        if self.recorder.open:
            self.compile_pauses += 1
            self._close(pause=True)
            self._reopen_soon()
        if self.recorder.open:  # could not stop (inside backward): its ops are left out at the fold
            self._compile_since = time.time_ns()
        self._lazy_compile.fire()  # torch._dynamo.optimize without torch.compile

    def _compile_ended(self) -> None:
        self._compiling = False
        if self._compile_since is not None:
            self.recorder.compile_spans.append((self._compile_since, time.time_ns()))
            self._compile_since = None

    def _compile_entered(self) -> None:
        """Dynamo is about to compile a frame (lazy_compile.CompileEntry): stop here, where the frames
        below hold no RecordFunction, so that a window may open again as soon as it is done."""
        self._compile_entry_at = time.perf_counter()
        if self.recorder.open:
            self.compile_pauses += 1
            with sigint_deferred():
                self._close(compile_entry=True, pause=True)
            self._reopen_soon()

    def _compile_left(self) -> None:
        """Dynamo compiled the frame and is about to run it: record it from its first run."""
        self._compiling = False
        self.accounts.compile_seconds += time.perf_counter() - self._compile_entry_at
        self._checkpoint()

    # --- the policy, carried out ---------------------------------------------------------------------
    def snapshot(self) -> Snapshot:
        blocked = (
            "finished"
            if self._finalized
            else "waiting for the program's first op"
            if self._armed
            else "paused by deactivate()"
            if self._paused
            else "torch.compile is compiling"
            if self._compiling
            else "the program's own torch.profiler is running"
            if self.foreign.active
            else "importing a module"
            if self.imports.busy
            else self._threads_unsafe()
            if self.recorder.threads.live or self.recorder.threads.starting
            else None
        )
        r = self.recorder
        age = r.age()
        window_cpu = r.cpu_age()
        # (the rate of the kind of window that records the next step: the open one, or the one that would open)
        self.accounts.shaping = self.sampling.window_shapes if r.open else self.sampling.next_shapes
        cost = self.accounts.projected(window_cpu)
        fold_due = r.open and (
            age >= self.options.fold_seconds
            # (a probe measures what a window costs: while a window still folds, the measure comes from that one)
            or (not self.accounts.measured and not self.budget.off and age >= PROBE_SECONDS and not r.folding)
            # (a sample ends at a turnover; one whose stop would wait for the child waits until it would not: on
            # word_lm's first steps, 0.79 s for ending a shape sample of 3 steps)
            or (self.sampling.due(age) and not r.stop_would_wait)
            or r.threads.due()
            or (self.calls is not None and self.calls.calls - self._window_calls >= self.options.fold_calls)
        )
        return Snapshot(
            recording=r.open,
            blocked=blocked,
            plan_wants=self.plan.wants(self.log.steps, self._plan_steps, r.recorded_seconds + age),
            at_step=self._at_step,
            steps=self.log.steps,
            whole_steps=self.log.whole_count,
            fold_due=bool(fold_due),
            cost=cost,
            program_seconds=self.accounts.program_seconds(),
            step_seconds=self._step_seconds,
            step_high=max(self._step_times) if self._step_times else None,
            rate=self.accounts.wall_rate,
            window_fixed=self.accounts.window_fixed(),
            folding=r.folding,
            fold_wait=r.expected_wait(),
            turnover_wait=r.turnover_wait(),
            sampled=self.accounts.holds > 0,
            window_cost=cost - self.accounts.cost,
            in_step=self._in_step(),
            window_cpu=window_cpu,
            rate_reach=self.accounts.rate_reach,
        )

    def _in_step(self) -> float | None:
        """The step under way's own CPU seconds so far, None before the first boundary: CPU time, what recording a
        step costs grows with (waits record nothing), kernelscope's own cost left out."""
        if self._last_step is None:
            return None
        return max(time.process_time() - self._last_step - (self.accounts.own.cpu - self._step_cost), 0.0)

    def _threads_unsafe(self) -> str | None:
        """A thread of the program's own runs: on a torch whose tracer may then crash the program, nothing is
        recorded until its threads have ended, said once (threads.py)."""
        why = self.recorder.threads.unsafe()
        if why is not None and why not in self.warnings:
            self.warnings.append(why)
        return why

    def _checkpoint(self) -> None:
        """A point between ops (module call, torch call, step, optimizer step): ask the policy, act. An error of
        kernelscope's own never reaches the program: recording stops, and the profile says why."""
        if self._broken is not None:
            return
        try:
            self._decide_and_act()
        except Exception as exc:
            self._broken = f"kernelscope stopped recording after an internal error ({type(exc).__name__}: {exc})"
            self.warnings.append(self._broken)
            self._busy = False
            try:
                if self.recorder.open and self.recorder.can_stop():
                    self.recorder.stop()
            except Exception:
                self.recorder.prof = None

    def _decide_and_act(self) -> None:
        self._routine_after = time.perf_counter() + ROUTINE_SECONDS
        self.recorder.poll()
        if self._import_since is not None and not self.imports.busy:
            self.accounts.import_seconds += time.perf_counter() - self._import_since
            self._import_since = None
        if self._busy or self._finalized or (self._armed and not self.recorder.open):
            return
        d = self.last_decision = decide(self.snapshot(), self.budget)
        if d.held:
            self.accounts.hold()
        elif d.action is Action.OPEN or self.recorder.open:
            self.accounts.release()
        if d.action is Action.OPEN:
            self._change(close=False)
        elif d.action is Action.CLOSE:
            with sigint_deferred():
                self._close()
        elif d.action is Action.TURN_OVER:
            self._change(close=True, measure=d.measure)
        if self._fresh:
            self._fresh = False
            if not self.recorder.open:
                self.log.closed()  # the program runs on from its first op unrecorded

    def _change(self, close: bool, measure: bool = False) -> None:
        """Open a window (turning the open one over first) where no RecordFunction begun under an earlier
        window can still be open (safepoint.py); elsewhere a turnover waits for the next such point."""
        safe = self.safety.can_turn_over() if close else self.safety.can_open()
        if not safe:
            self.deferred += 1
            self._ask_again()  # (a safe point may be rare, as beside threads)
            return
        self._busy = True
        try:
            with sigint_deferred():
                if close and not self._close(turnover=True, inline=measure):
                    self._ask_again()
                    return
                if close and not self._reopens():
                    return
                self._open()
        finally:
            self._busy = False

    def _reopens(self) -> bool:
        """After a turnover's close at a step boundary, with the closed window's cost now measured (folded here, not
        in a child), does recording still go on? The policy is asked again, as of a window open here (a turnover goes
        on recording: asked as of none, the first steps, of no measured length yet, were priced at the program's
        time so far and the README example lost its second step): a step it would close for is not recorded at
        all, rather than cut inside once the window's cost shows."""
        if not self._at_step or self._behind or self.budget.off:
            return True
        again = decide(dataclasses.replace(self.snapshot(), recording=True), self.budget)
        if again.action is not Action.CLOSE:
            return True
        self.last_decision = again
        self.log.closed(at_step=True)
        if again.held:
            self.accounts.hold()
        return False

    def _operators_paused(self) -> None:
        """The operator wrappers are off for a library optimizer's step: the next module call, which resumes them
        if the step raised (no post hook), reaches the session whatever the count-down says."""
        self.modules.quiet = 0

    def _ask_again(self) -> None:
        """The next torch call or module call asks the policy again."""
        self._routine_after = 0.0
        self.modules.quiet = 0

    def _open(self) -> None:
        with self.accounts.spending() as spend:
            self.recorder.start()
        self._opened = spend.cpu
        self.log.opened(at_step=self._at_step)
        self._watch_compiles()
        self._window_calls = self.calls.calls if self.calls is not None else 0
        if self.calls is not None and self.calls.every == 1 and not self._armed:
            self.calls.rearm(FOLD_CHECK_CALLS)

    def _close(
        self, compile_entry: bool = False, turnover: bool = False, pause: bool = False, inline: bool = False
    ) -> bool:
        """Stop and fold the open window; False when there is none or it cannot stop here (backward())."""
        if not self.recorder.can_stop(self._finalized):
            return False
        self.modules.quiet = 0  # (with no window open every module call may ask)
        self.modules.resolve()
        busy, self._busy = self._busy, True  # (what stopping imports is kernelscope's, not the program's)
        try:
            with self.accounts.spending() as closing:
                closed = self.recorder.stop(compile_entry=compile_entry, inline=inline or self._finalized)
        finally:
            self._busy = busy
        if closed.pending:  # folding in the background: the figures come to _folded_behind
            self._behind.append((closing, self._opened, self.log.window_from))
            self.accounts.window_stopped(cpu=closed.cpu, closing=closing, fixed=self._opened, shapes=closed.shapes)
        else:
            self._window_folded(closed, closing, self._opened, None)
        if not turnover:
            self.log.closed(pause=pause, at_step=self._at_step)
        return True

    def _folded_behind(self, closed: Closed) -> None:
        if self._behind:
            closing, fixed, window_from = self._behind.popleft()
            self._window_folded(closed, closing, fixed, window_from)

    def _window_folded(self, closed: Closed, closing: Spend, fixed: float, window_from: int | None) -> None:
        """A window's figures, once it is folded: the accounts, the steps it held if it was lost, a checkpoint."""
        if closed.cow:  # (the faults its child's fork cost the program: kernelscope's, as its stop)
            self.accounts.charge(closing, closed.cow)
            # they do not grow with the window (the program's written memory does not): its fixed part, as
            # opening is. In the rate they made each second of a short shape-sample window several times dearer,
            # and nanoGPT-20's 1-s window was projected 1.5 s over its real cost and cut at step 16 of 20
            fixed += closed.cow
        if closed.adopt:  # (taking it in at a checkpoint, freeing torch's results: grows with the window, as its stop)
            self.accounts.charge(closing, closed.adopt)
        if closed.forked:  # (forking its child at a checkpoint, after it waited its turn: as its stop)
            self.accounts.charge(closing, closed.forked)
        self.accounts.window_closed(
            window=closed.window,
            cpu=closed.cpu,
            events=closed.events,
            op_seconds=closed.op_seconds,
            closing=closing,
            fixed=fixed,
            lost=closed.lost,
            shapes=closed.shapes,
        )
        if closed.lost:
            self.log.lost(window_from)
        if self.checkpoint is not None and not self._finalized:  # a killed run keeps what was folded
            self.checkpoint.folded(self)

    def scope_enter(self, name: str, metrics: dict[str, float] | None) -> bool:
        if not self.active:
            return False
        self.scope_metrics[name].append(dict(metrics or {}))
        return True

    def finalize(self) -> Profile:
        r = self.recorder
        if not self._finalized:
            self._finalized = True
            r.settle()  # (a window folding in the background: its figures before the last window's)
            self.log.end(r.open)
            with sigint_deferred():
                self._close()
            self.accounts.end()
            if self.lines is not None:
                self.lines.__exit__(None, None, None)  # type: ignore[no-untyped-call]
                self.lines = None
            if self.operators is not None:
                self.operators.remove()
                self.operators = None
            self.modules.remove()
            self.safety.remove()
            r.clear()
            self.step_source.remove()
            self.foreign.remove()
            self.imports.remove()
            self._compile_entry.remove()
            self._lazy_compile.remove()
            if self._compile_watch is not None:
                self._compile_watch.remove()
            self.warnings.extend(
                session_notes(self.plan.skip_first, self.log.steps, r.windows, r.events, self._armed, threads=r.threads)
            )
        metadata = session_metadata(self)
        if r.compile is not None:
            metadata["compile"] = r.compile.diagnostics()
            self.warnings.extend(r.compile.warnings)
            r.compile.__exit__(None, None, None)
            r.compile = None
        if r.triton is not None:
            r.triton.remove()
            r.triton.graft(r.builder)
            self.warnings.extend(r.triton.warnings)
            r.triton = None
        metadata.update(self.sampling.metadata(r.builder))
        if r.folder.native is not None:
            metadata["native"], line = r.folder.native.finish(r.builder, r.device_run)
            self.warnings.append(line)
            r.folder.native = None
        for metric in ("time_ns", "cpu_time_ns", "count"):
            r.builder.ensure_metric(metric)
        return prune_empty(r.folder.build(metadata, self.warnings))


def _program_running(frame: FrameType | None) -> bool:
    """Is the program's own code on this stack, outside an import?"""
    program = False
    while frame is not None:
        file = frame.f_code.co_filename
        if file.startswith("<frozen importlib"):
            return False
        program = program or is_program_file(file)
        frame = frame.f_back
    return program
