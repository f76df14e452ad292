"""Live PyTorch collection: run torch.profiler with the Python tracer and fold its events as we go.

A Session owns one logical profile, recorded as a series of windows (one torch.profiler run
each) that are folded into the calling-context tree as the run goes (see Session).
"""

from __future__ import annotations

import gc
import sys
import threading
import time
from collections import defaultdict, deque
from types import FrameType
from typing import TYPE_CHECKING, Any

from ..model import Profile
from ..model.profile import prune_empty
from ._process import _quiet_fd, _sigint_deferred
from .budget import GRACE_SECONDS_DEFAULT, MAX_OVERHEAD_DEFAULT, PROBE_SECONDS, Ledger, OverheadBudget
from .checkpoint import Checkpoint
from .continued import Chain, OpenFrames
from .foreign import ForeignProfiler
from .heavy_imports import HeavyImportWatch, heavy_imports_done
from .lazy_compile import CompileEntry, LazyCompile
from .live_metadata import session_metadata
from .modules import ModuleRegistry
from .notes import session_notes, start_compile_capture
from .plan import Plan
from .safepoint import StackSafety, in_backward
from .sampling import Sampling
from .steps import StepDetector
from .torch_fold import WindowFolder
from .userframes import is_program_file

if TYPE_CHECKING:
    from .torch_lines import Counter, LineMode, OperatorLines

PROFILE_MEMORY_DEFAULT = True
# Allocation events are ~40% of a window's fold: like shapes, recorded in the first window only by default
# (later calls of a context get its alloc_bytes per call); None follows --shapes ("all" -> all).
MEMORY_MODES = ("sample", "all", "off")
RECORD_FROM = ("start", "first-call")
# Fold as the run goes: a window is folded and a new one opened after this long or this many
# torch calls (checked every FOLD_CHECK_CALLS torch calls, at module calls and at step()).
FOLD_SECONDS_DEFAULT = 1.0
FOLD_CALLS_DEFAULT = 200_000
FOLD_CHECK_CALLS = 1024
# Recording input shapes is most of the profiler's step overhead (see benchmarks/README.md). By
# default shapes are recorded for the first SHAPE_SECONDS of profiled time only; later calls of an
# op at the same context get that context's FLOPs and bytes per call (exact for static shapes).
SHAPE_MODES = ("sample", "all", "off")
SHAPE_SECONDS_DEFAULT = 1.0
# The profiler's results sit in reference cycles: collected once this many events were folded since the
# last collection (a full collection of a process with torch loaded takes ~0.1 s on this VM).
GC_EVENTS = 200_000


class Session:
    """One profile being collected. Not thread-safe; one per process (see api.py).

    Recording is a series of *windows* (one torch.profiler run each). A window is folded into the
    tree and dropped when it closes, so memory holds the tree, not the events. Windows open and close
    only at safe points (safepoint.py): at ``step()``, at ``nn.Module`` calls and at torch calls from
    Python (seen through the LineMode). A window is closed and a new one opened when it has run
    ``fold_seconds`` or seen ``fold_calls`` torch calls, when the sampling window (shapes, allocations) is
    over, and where the plan (skip_first, schedule, steps, duration) says recording stops or starts. After a
    fold, the overhead budget (budget.py) may hold the next window back until the run has caught up.
    """

    def __init__(
        self,
        *,
        shapes: str = "sample",
        shape_seconds: float = SHAPE_SECONDS_DEFAULT,
        profile_memory: bool = PROFILE_MEMORY_DEFAULT,
        memory: str | None = None,
        max_overhead: float | None = None,
        grace_seconds: float = GRACE_SECONDS_DEFAULT,
        skip_first: int = 0,
        compile_capture: bool = True,
        argv: list[str] | None = None,
        plan: Plan | None = None,
        record_from: str = "start",
        fold_seconds: float = FOLD_SECONDS_DEFAULT,
        fold_calls: int = FOLD_CALLS_DEFAULT,
    ) -> None:
        if shapes not in SHAPE_MODES:
            raise ValueError(f"shapes must be one of {', '.join(SHAPE_MODES)}, not {shapes!r}")
        if record_from not in RECORD_FROM:
            raise ValueError(f"record_from must be one of {', '.join(RECORD_FROM)}, not {record_from!r}")
        if memory is None:
            memory = "off" if not profile_memory else "all" if shapes == "all" else "sample"
        if memory not in MEMORY_MODES:
            raise ValueError(f"memory must be one of {', '.join(MEMORY_MODES)}, not {memory!r}")
        self.shapes = shapes
        self.memory = memory
        self.sampling = Sampling(shapes, memory, shape_seconds)  # shapes and allocations, sampled (sampling.py)
        self._window_start = 0.0
        self._window_cpu = (0.0, 0)  # the recording thread's CPU time when the window opened, and that thread
        self._window_calls = 0
        self.profile_memory = memory != "off"
        self.plan = plan if plan is not None else Plan(skip_first=skip_first)
        if max_overhead is None:  # an explicit plan records what it asks for
            max_overhead = 0.0 if self.plan.explicit else MAX_OVERHEAD_DEFAULT
        self.budget = Ledger(OverheadBudget(max_overhead, grace_seconds))
        self.record_from = record_from
        self._armed = record_from == "first-call"  # waiting for the program's own first op or module call
        self.fold_seconds = fold_seconds
        self.fold_calls = fold_calls
        self.modules = ModuleRegistry(self._on_module_call, self._on_outer_module_return)
        self.safety = StackSafety()
        self.step_source: StepDetector = StepDetector(self._auto_step, self._restart_steps)
        self.heavy_imports = HeavyImportWatch(self._heavy_import)
        self.foreign = ForeignProfiler(
            lambda prof: getattr(prof, "_kernelscope_own", False),
            self._foreign_starting,
            self._foreign_stopped,
            self._auto_step,
        )
        self.lines: LineMode | None = None  # while waiting for the first op, and for module-less programs
        self.operators: OperatorLines | None = None
        self.calls: Counter | None = None
        self.scope_metrics: dict[str, deque[dict[str, float]]] = defaultdict(deque)
        # the one attribution engine, folding window by window (torch_fold, attribute.engine)
        self.folder = WindowFolder(self.modules.path, self.scope_metrics)
        self.builder = self.folder.builder
        self.steps = 0
        self.recorded_steps = 0
        self.recorded_seconds = 0.0
        self.recorded_cpu_seconds = 0.0  # the same windows in the recording thread's CPU time (the budget's grace)
        self.windows = 0
        self.deferred = 0  # window changes put off because the point was not safe
        self.start_time = time.time()
        self.argv = list(argv if argv is not None else sys.argv)
        self.checkpoint: Checkpoint | None = None  # set by `kernelscope run` (issue 25 hook)
        self._prof: Any = None
        self._ran_on = OpenFrames()  # frames running on from one window into the next (one call each)
        self._chain: Chain = ()  # the stack when the open window opened (continued.py)
        self._device_run = False
        self._cuda = False
        self._compile: Any = None
        self._triton: Any = None  # Proton-style launch metrics, when the program uses Triton
        self._want_compile = compile_capture
        self._paused = False  # deactivate() from the API
        self._compiling = False  # torch.compile is compiling: not recorded (its events are huge)
        self._compile_watch: Any = None  # compile.watch.CompileWatch, once Dynamo is loaded
        self._lazy_compile = LazyCompile(self._start_compile_capture)
        self._compile_entry = CompileEntry(self._compile_entered, self._compile_left)
        self.compile_pauses = 0
        self._finalized = False
        self._busy = False  # inside a window change: hooks fired from it are ignored
        self.warnings: list[str] = []
        self.fold_time = 0.0
        self.events = 0
        self._at_step = False  # inside _count_step: a step boundary
        self.compile_seconds = 0.0  # spent in Dynamo's compilation (not recorded, by design)
        self._compile_entry_at = 0.0
        self.import_seconds = 0.0  # spent importing torch._dynamo / torch._inductor (not recorded: heavy_imports.py)
        self._import_since: float | None = None  # stopped for an import of torch.compile's machinery since
        self._uncollected = 0  # events folded since the last garbage collection
        self._compile_since: int | None = None  # torch.compile compiling inside the open window since (ns)
        self._compile_spans: list[tuple[int, int]] = []
        self._last_step: float | None = None
        self._step_seconds = 0.0  # the last step's own time (wall time less kernelscope's cost in it)
        self._step_cost = 0.0  # kernelscope's cost when the last step ended

    # --- lifecycle ---------------------------------------------------------------
    def start(self) -> None:
        self.safety.install()
        self.modules.install()
        self.step_source.install()
        self.foreign.install()
        self.heavy_imports.install()
        self._watch_compiles()  # only if Dynamo is loaded: importing it costs ~1 s here
        self._lazy_compile.install()
        from .torch_lines import Counter, LineMode, OperatorLines

        self.calls = Counter(self._on_torch_call, every=1 if self._armed else FOLD_CHECK_CALLS)
        self.operators = OperatorLines(self.calls)
        self.operators.install()
        self.lines = LineMode(self.calls)
        self.lines.__enter__()  # type: ignore[no-untyped-call]
        if not self._armed:
            self._checkpoint()

    def _watch_compiles(self) -> None:
        """Hook Dynamo's compile callbacks once Dynamo is loaded (the program compiles, or imported it)."""
        if self._compile_watch is None and "torch._dynamo" in sys.modules:
            from .compile.watch import CompileWatch  # (the compile package loads only with Dynamo)

            self._compile_watch = CompileWatch(self._compile_started, self._compile_ended)
            self._compile_watch.install()

    def _start_compile_capture(self) -> None:
        """The program is about to use torch.compile (lazy_compile.py): hook Dynamo and Inductor in, with
        no window open (their imports would be recorded)."""
        if self._prof is not None:
            with _sigint_deferred():
                self._close_window()
            self._reopen_soon()
        busy, self._busy = self._busy, True  # its imports run torch code: no window opens for them
        t0 = time.perf_counter()
        try:
            import torch._dynamo  # noqa: F401  (torch.compile imports it next anyway)

            self._watch_compiles()
            self._compile_entry.install()
            if self._want_compile:
                self._compile = start_compile_capture(self.warnings)
                if self._compile is not None:
                    from ..attribute.compiled_placer import CapturePlacer

                    self.folder.set_placer(CapturePlacer(self._compile))
        finally:
            self._busy = busy
            if self.budget.started is not None:  # Inductor's imports (its first compile's, early), once recording
                self.compile_seconds += time.perf_counter() - t0

    @property
    def active(self) -> bool:
        return self._prof is not None

    def activate(self) -> None:
        """API: resume recording (at this point, if it is safe; else at the next safe point)."""
        self._paused = False
        self._armed = False
        self._checkpoint()

    def deactivate(self) -> None:
        """API: pause recording. Stopping is always safe."""
        self._paused = True
        with _sigint_deferred():  # a Ctrl-C mid-fold would lose the window's events
            self._close_window()

    def step(self) -> None:
        """The program's own step boundary (``kernelscope.step()``): from now on the only steps counted."""
        self.step_source.explicit()
        self._count_step()

    def _restart_steps(self) -> None:
        """Another step source won (steps.py): the steps counted so far were parts of its first step."""
        self.steps = self.recorded_steps = 0
        self.budget.steps_before = 0

    def _auto_step(self) -> None:
        """A step boundary found without the program's help (steps.py)."""
        self._count_step()

    def _count_step(self) -> None:
        now = time.perf_counter()
        if self._last_step is not None:  # the program's own time in the step: kernelscope's cost left out
            self._step_seconds = max(now - self._last_step - (self.budget.cost - self._step_cost), 0.0)
        self._last_step, self._step_cost = now, self.budget.cost
        if self._prof is not None:
            self.recorded_steps += 1
        self.budget.step()
        self.steps += 1
        self._armed = False
        self._at_step = True
        try:
            self._checkpoint()
        finally:
            self._at_step = False

    def _on_torch_call(self) -> None:
        if self._armed:
            # the program's first op: one called while the program's code runs (module construction
            # included), not an import-time op of a library the program imports
            if not _program_running(sys._getframe(3)):
                return
            self._armed = False
            if self.calls is not None:
                self.calls.rearm(FOLD_CHECK_CALLS)
        self._checkpoint()

    def _on_module_call(self) -> None:
        """A module call (outside any torch function call): the safe place to drop the LineMode, once
        module calls and operators can drive the checkpoints (it costs a Python call per torch call)."""
        if self.lines is not None and not self._armed:
            from torch.overrides import _get_current_function_mode_stack

            stack = _get_current_function_mode_stack()  # type: ignore[no-untyped-call]
            if stack and stack[-1] is self.lines:  # never pop a mode the program pushed after ours
                self.lines.__exit__(None, None, None)  # type: ignore[no-untyped-call]
                self.lines = None
        self._checkpoint()

    def _on_outer_module_return(self) -> None:
        self.step_source.outer_module_returned()

    def _reopen_soon(self) -> None:
        """A window was stopped for something that is over soon (an import, a compile): ask at every torch
        call from Python, not every 1024th, until one opens (_open_window sets it back)."""
        if self.calls is not None:
            self.calls.rearm(1)

    def _heavy_import(self, name: str) -> None:
        """The program imports torch.compile's machinery (heavy_imports.py): not recorded."""
        if self._prof is not None and not self._busy:
            with _sigint_deferred():
                self._close_window()
            if self._prof is None:
                self._import_since = time.perf_counter()  # up to the next window
                self._reopen_soon()

    def _foreign_starting(self) -> None:
        """The program starts its own torch.profiler (foreign.py): step aside."""
        if self._prof is not None:
            with _sigint_deferred():
                self._close_window()
        if self._prof is not None:  # inside backward(): it cannot stop there; the program's start will fail
            self.warnings.append("the program started torch.profiler inside backward() while kernelscope recorded")

    def _foreign_stopped(self, prof: Any) -> None:
        """The program stopped its own profiler: fold what it recorded, then record again when safe."""
        self.safety.stopped(skip=3)
        if self._finalized or self._paused or getattr(prof, "kineto_results", None) is None:
            return
        self._busy = True
        try:
            with _sigint_deferred():
                t0 = time.perf_counter()
                self.modules.resolve()
                self.events += self.folder.fold(
                    prof.kineto_results,
                    shapes=bool(getattr(prof, "record_shapes", False)),
                    cuda=self._cuda,
                    compile_capture=self._compile,
                    notes=self.warnings,
                )
                self.fold_time += time.perf_counter() - t0
                self.budget.charge(time.perf_counter() - t0)
        finally:
            self._busy = False
        self._checkpoint()

    def _compile_started(self) -> None:
        """Compiling records millions of Python events and is not the program's steady state: stop the
        window when torch.compile starts (stopping is safe anywhere). Compile times come from torch's own
        compile metrics (collect.compile)."""
        self._compiling = True
        if self._prof is not None:
            self.compile_pauses += 1
            self._close_window()
            self._reopen_soon()
        if self._prof is not None:  # could not stop (inside backward): its ops are left out at the fold
            self._compile_since = time.time_ns()
        self._lazy_compile.fire()  # torch._dynamo.optimize without torch.compile

    def _compile_ended(self) -> None:
        self._compiling = False
        if self._compile_since is not None:
            self._compile_spans.append((self._compile_since, time.time_ns()))
            self._compile_since = None

    def _compile_entered(self) -> None:
        """Dynamo is about to compile a frame (lazy_compile.CompileEntry): stop here, where the frames
        below hold no RecordFunction, so that a window may open again as soon as it is done."""
        self._compile_entry_at = time.perf_counter()
        if self._prof is not None:
            self.compile_pauses += 1
            with _sigint_deferred():
                self._close_window(compile_entry=True)
            self._reopen_soon()

    def _compile_left(self) -> None:
        """Dynamo compiled the frame and is about to run it: record it from its first run."""
        self._compiling = False
        self.compile_seconds += time.perf_counter() - self._compile_entry_at
        self._checkpoint()

    def _wanted(self) -> bool:
        if self._armed or self._paused or self._finalized or self._compiling or self.foreign.active:
            self.budget.release()  # held time is time the budget alone kept from recording
            return False
        seconds = self.recorded_seconds
        if self._prof is not None:
            seconds += time.perf_counter() - self._window_start
        if not self.plan.wants(self.steps, self.recorded_steps, seconds):
            self.budget.release()
            return False
        if self._prof is not None:
            window = time.perf_counter() - self._window_start
            if not self.budget.measured and not self.budget.budget.off and window < 2 * PROBE_SECONDS:
                return True  # the probe window turns over at its next safe point (_fold_due): it measures the rate
            if self._at_step and self._sampling:  # a whole step more, or stop at this boundary
                return self.budget.may_continue(window, ahead=self._step_seconds)
            return self.budget.may_continue(window)  # cut short only past the budget: stopping is safe anywhere
        if self._sampling and not self._at_step and self.step_source.source is not None:
            return False  # once sampling, windows open at step boundaries: the sample is of whole steps
        return self.budget.may_open(self.steps, ahead=self._step_seconds if self._sampling else 0.0)

    @property
    def _sampling(self) -> bool:
        """The budget has held recording back at least once: from then on the run is sampled."""
        return self.budget.holds > 0

    def _checkpoint(self) -> None:
        """A point between ops (module call, torch call, step, optimizer step): open, close or turn over a
        window."""
        if self._import_since is not None and heavy_imports_done():
            self.import_seconds += time.perf_counter() - self._import_since
            self._import_since = None
        if self._busy or self._finalized or (self._armed and self._prof is None):
            return
        want = self._wanted()
        if self._prof is None:
            if want:
                self._change(close=False)
        elif not want:
            with _sigint_deferred():
                self._close_window()
        elif self._fold_due():
            self._change(close=True)

    def _fold_due(self) -> bool:
        elapsed = time.perf_counter() - self._window_start
        if not self.budget.measured and not self.budget.budget.off and elapsed >= PROBE_SECONDS:
            return True  # a short first window tells what recording this program costs
        if self.sampling.due(elapsed):
            return True
        calls = self.calls.calls - self._window_calls if self.calls is not None else 0
        return elapsed >= self.fold_seconds or calls >= self.fold_calls

    def _change(self, close: bool) -> None:
        """Open a window (turning the open one over first) where no RecordFunction begun under an earlier
        window can still be open (safepoint.py); elsewhere a turnover waits for the next such point."""
        safe = self.safety.can_turn_over(skip=2) if close else self.safety.can_open(skip=2)
        if not safe:
            self.deferred += 1
            return
        self._busy = True
        try:
            with _sigint_deferred():
                if close:
                    self._close_window()
                    if self._prof is not None or not self._wanted():  # the overhead budget holds the next window back
                        return
                self._open_window()
        finally:
            self._busy = False

    def _open_window(self) -> None:
        import torch
        from torch.autograd.profiler import profile

        # torch.autograd.profiler directly: torch.profiler.profile's start imports torch._inductor (1 s here)
        self._cuda = torch.cuda.is_available()
        t0 = time.perf_counter()
        self.sampling.opening(t0)
        self._chain = self._ran_on.at_open()
        with _quiet_fd(2):
            prof = profile(
                use_kineto=True,
                use_device="cuda" if self._cuda else None,
                record_shapes=self.sampling.window_shapes,
                profile_memory=self.sampling.window_memory,
                with_stack=True,
                with_modules=True,
            )
            prof._kernelscope_own = True  # type: ignore[attr-defined]  # not the program's own profiler (foreign.py)
            prof.__enter__()  # type: ignore[no-untyped-call]
        if self._triton is None and "triton" in sys.modules:
            from .triton.launches import LaunchRecorder

            self._triton = LaunchRecorder.install_if_available()
        self._prof = prof
        self.safety.opened()
        self._watch_compiles()
        self.windows += 1
        self._window_start = time.perf_counter()
        self._window_cpu = (time.thread_time(), threading.get_ident())
        self.budget.charge(self._window_start - t0)
        self._window_calls = self.calls.calls if self.calls is not None else 0
        if self.calls is not None and self.calls.every == 1 and not self._armed:
            self.calls.rearm(FOLD_CHECK_CALLS)

    def _close_window(self, compile_entry: bool = False) -> None:
        """Stop and fold the window (stopping is safe anywhere; safepoint.py remembers what may still
        hold its RecordFunctions)."""
        prof = self._prof
        if prof is None or (not self._finalized and in_backward()):
            return  # inside backward() the profiler cannot be stopped (safepoint.py): it stops after
        self._prof = None
        start = time.perf_counter()
        window = start - self._window_start
        self.recorded_seconds += window
        cpu, thread = self._window_cpu  # CPU time, so that a loaded machine does not shorten the grace
        self.recorded_cpu_seconds += time.thread_time() - cpu if thread == threading.get_ident() else window
        with _quiet_fd(2):
            prof.__exit__(None, None, None)
        self._ran_on.at_close()
        self.safety.stopped(skip=2, compile_entry=compile_entry)
        t0 = time.perf_counter()
        events = self._fold(prof)
        # the profiler object sits in reference cycles with its results: break what we can and collect
        # the rest here, not in a later timed step (without the collection peak memory grows with the run)
        prof.kineto_results = None
        del prof
        folded = time.perf_counter()
        self._uncollected += events
        if self._uncollected >= GC_EVENTS:  # a full collection costs ~0.1 s here: not after every small window
            gc.collect()
            self._uncollected = 0
        end = time.perf_counter()
        self.fold_time += end - t0
        self.budget.window_closed(window=window, events=events, stop_and_fold=folded - start)
        self.budget.charge(end - folded)  # a fixed cost per window, not a rate
        self.sampling.closed(self.builder, self.recorded_seconds, time.perf_counter())
        # --- hook (issue 25): a killed run keeps what was folded (collect/checkpoint.py) ---
        if self.checkpoint is not None and not self._finalized:
            self.checkpoint.folded(self)

    def scope_enter(self, name: str, metrics: dict[str, float] | None) -> bool:
        if not self.active:
            return False
        self.scope_metrics[name].append(dict(metrics or {}))
        return True

    def finalize(self) -> Profile:
        if not self._finalized:
            self._finalized = True
            with _sigint_deferred():
                self._close_window()
            self.budget.end()
            if self.lines is not None:
                self.lines.__exit__(None, None, None)  # type: ignore[no-untyped-call]
                self.lines = None
            if self.operators is not None:
                self.operators.remove()
                self.operators = None
            self.modules.remove()
            self.safety.remove()
            self._ran_on.clear()
            self.step_source.remove()
            self.foreign.remove()
            self.heavy_imports.remove()
            self._compile_entry.remove()
            self._lazy_compile.remove()
            if self._compile_watch is not None:
                self._compile_watch.remove()
            self.warnings.extend(
                session_notes(self.plan.skip_first, self.steps, self.windows, self.events, self._armed)
            )
        metadata = session_metadata(self)
        if self._compile is not None:
            metadata["compile"] = self._compile.diagnostics()
            self.warnings.extend(self._compile.warnings)
            self._compile.__exit__(None, None, None)
            self._compile = None
        if self._triton is not None:
            self._triton.remove()
            self._triton.graft(self.builder)
            self.warnings.extend(self._triton.warnings)
            self._triton = None
        metadata.update(self.sampling.metadata(self.builder))
        for metric in ("time_ns", "cpu_time_ns", "count"):
            self.builder.ensure_metric(metric)
        return prune_empty(self.folder.build(metadata, self.warnings))

    # --- folding ---------------------------------------------------------------
    def _fold(self, prof: Any) -> int:
        """One window's events through the engine, into the tree (the events are dropped after)."""
        self.modules.resolve()
        events = self.folder.fold(
            prof.kineto_results,
            shapes=self.sampling.window_shapes,
            cuda=self._cuda,
            compile_capture=self._compile,
            notes=self.warnings,
            compiling=tuple(self._compile_spans),
            continued=self._chain,
        )
        self._compile_spans.clear()
        self.events += events
        self._device_run = self.folder.device_run
        return events


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
