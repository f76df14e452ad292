"""The mechanism of a live torch session: open a window (one torch profiler run), stop it, fold its events
into the tree through the one engine (torch_fold.py). It decides nothing: the session asks the policy
(policy.py) when, and the recorder reports what each window cost so the accounts (accounts.py) can say it.
"""

from __future__ import annotations

import dataclasses
import gc
import os
import sys
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ._process import quiet_fd
from .background import BackgroundFold, Folded, adopt_state, folder_state
from .continued import Chain, OpenFrames, Split
from .safepoint import StackSafety, in_backward
from .sampling import Sampling
from .threads import ThreadWatch
from .torch_compat import stop_profiler
from .torch_fold import WindowFolder

# The profiler's results sit in reference cycles: collected once this many events were folded since the
# last collection, when the collection must scan the whole process (see Recorder._collect).
GC_EVENTS = 200_000

# A window that ran less CPU time than this folds in the program's process: forking costs more than its fold.
BACKGROUND_MIN_CPU = 0.05
# Windows that may wait their turn while a child folds the one before; a stop that finds this many waits for the
# child. Each holds torch's results of its window until its own fold (nanoGPT: ~85 MB a 6-step window).
MAX_QUEUED = 2
MAX_PAUSES = 40_000  # own pauses kept in the metadata (two a window, a window a second: five and a half hours)


@dataclass(frozen=True)
class Closed:
    """What one window was."""

    window: float  # wall seconds it was open
    cpu: float  # the process's CPU seconds while it was open
    events: int
    op_seconds: float  # op time folded from it
    lost: bool = False  # torch could not stop or post-process it: nothing of it is in the profile
    pending: bool = False  # folding in the background: ``Recorder.on_folded`` gets the figures once it is in
    cow: float = 0.0  # seconds of copy-on-write faults its child's fork cost the program (background.py)
    # seconds taking it in after its child, where no stop's own time holds them (a checkpoint's poll)
    adopt: float = 0.0
    shapes: bool = False  # it recorded shapes (the sample): torch's stop and the fold cost about twice as much
    forked: float = 0.0  # seconds forking its child took at a checkpoint, after the window had waited its turn


@dataclass
class _Queued:
    """A window stopped while a child still folded the one before: folded once that child is done."""

    results: Any  # torch's results
    closed: Closed
    snapshots: tuple[bool, bool]
    stopped: float  # the wall seconds torch's stop of it took
    chain: Chain
    split: Split | None
    pid: int  # the process that stopped it (a forked copy of the program drops it)


class Recorder:
    def __init__(
        self,
        sampling: Sampling,
        safety: StackSafety,
        module_path: Callable[[int], tuple[str, str] | None],
        scope_metrics: Mapping[str, deque[dict[str, float]]],
        background: bool = True,
    ) -> None:
        self.sampling = sampling
        self.safety = safety
        self.folder = WindowFolder(module_path, scope_metrics)
        self.prof: Any = None
        self.windows = 0
        self.events = 0
        self.fold_time = 0.0
        self.recorded_seconds = 0.0  # wall seconds of the windows (the shape sample's clock)
        self.lost_windows = 0  # windows torch could not stop or post-process (torch_compat.stop_profiler)
        # when kernelscope held the program to open, stop and fold windows, in torch's clock (epoch ns):
        # `kernelscope ranks` leaves them out of a rank's arrival at its collectives
        self.own_ns: list[tuple[int, int]] = []
        self.cuda = False
        self.device_run = False
        self.compile: Any = None  # CompileCapture, once the program compiles
        self.compile_spans: list[tuple[int, int]] = []
        self.triton: Any = None
        self.warnings: list[str] = []
        self.threads = ThreadWatch()  # the program's own threads (threads.py)
        self.folder.threads = self.threads
        self._ran_on = OpenFrames()  # frames running on from one window into the next (one call each)
        self._chain: Chain = ()
        self._split: Split | None = None  # the program's ranges split at the open window's edges
        self._start = 0.0
        self._cpu = 0.0
        self._clean = True  # no child folded beside the open window (its CPU share is the program's own demand)
        self._uncollected = 0
        self._frozen = False  # the objects older than the open window are frozen (see _collect)
        self._polled_at: float | None = None  # (perf_counter) a checkpoint is taking a finished window in
        self._results_behind: Any = None  # torch's results of the window a child folds, freed once it is done
        # windows stopped while a child folded the one before: they wait their turn instead of their stop waiting
        # for the child (word_lm's set-up: a close waited 0.94 s for the child of the window before it)
        self._queued: deque[_Queued] = deque()
        self._forked_at = 0.0  # seconds the checkpoint that handed it to a child took to fork (charged on its return)
        self.queued = 0  # windows that waited their turn
        # windows folded in a forked child while the program runs on (background.py)
        self.background = BackgroundFold() if background else None
        self.on_folded: Callable[[Closed], None] | None = None  # a window folded in the background is in

    @property
    def builder(self) -> Any:
        """The tree so far: a window folding in the background is waited for."""
        self.settle()
        return self.folder.builder

    def settle(self) -> None:
        """Wait for a window folding in the background and take it in; fold the windows waiting their turn here
        (once no window records: their fold would be recorded)."""
        if self.background is not None:
            self.background.settle()
            while self._queued and self.prof is None:
                self._next(inline=True)

    def poll(self) -> None:
        """Take in a window the background has finished folding, if any, and hand the next window waiting its turn
        to a child (never waits for a child)."""
        if self.background is not None and (self.background.busy or self._queued):
            self._polled_at = time.perf_counter()
            try:
                self._advance(wait=False)
            finally:
                self._polled_at = None

    def _advance(self, wait: bool) -> None:
        """Take the child's window in (``wait``: waiting for it) and, with no window recording (a fork would copy a
        recording profiler), hand the next window waiting its turn to a child of its own (those that may not fold
        in a child any more fold here)."""
        b = self.background
        if b is None:
            return
        if wait:
            b.settle()
        else:
            b.poll()
        while self._queued and not b.busy and self.prof is None:
            self._next(inline=False)

    @property
    def folding(self) -> bool:
        """Is a window still to be taken in from the background (folding in a child, or waiting its turn)?"""
        return self.background is not None and (self.background.busy or bool(self._queued))

    @property
    def stop_would_wait(self) -> bool:
        """Would stopping the open window now wait for the child (as many windows wait their turn as may)?"""
        return self.background is not None and self.background.busy and len(self._queued) >= MAX_QUEUED

    def expected_wait(self) -> float:
        """How long taking every window in now would wait for the background: the child's remaining time, and the
        folds of the windows waiting their turn."""
        if self.background is None:
            return 0.0
        queued = sum(self.background.fold_seconds(q.closed.cpu, q.stopped) for q in self._queued)
        return self.background.expected_wait() + queued

    def _next(self, inline: bool) -> None:
        """The child is done: the next window that waited its turn goes to a child of its own, or (``inline``: a
        stop or a reader waits for the tree anyway; background folding has stopped) folds here."""
        if not self._queued:
            return
        q = self._queued.popleft()
        if q.pid != os.getpid():  # (a forked copy of the program: the program folds it)
            return
        t0 = time.perf_counter()
        b = self.background
        if (
            not inline
            and b is not None
            and self._foldable_behind(q.closed.cpu)
            and self._fold_behind(
                q.results, q.closed, q.snapshots, q.stopped, shapes=q.closed.shapes, chain=q.chain, split=q.split
            )
        ):
            self._results_behind = q.results
            if self._polled_at is not None:  # (at a checkpoint: a stop's own time holds it otherwise)
                self._forked_at = time.perf_counter() - t0
            return
        events, ops = self._fold_here(q.results, q.snapshots, shapes=q.closed.shapes, chain=q.chain, split=q.split)
        q.results = None
        self._uncollected += events
        self._collect()
        closed = dataclasses.replace(q.closed, events=events, op_seconds=ops)
        if self._polled_at is not None:  # (here, not in a stop's own time)
            closed = dataclasses.replace(closed, adopt=time.perf_counter() - t0)
        if self.on_folded is not None:
            self.on_folded(closed)

    @property
    def open(self) -> bool:
        return self.prof is not None

    def age(self) -> float:
        return time.perf_counter() - self._start if self.prof is not None else 0.0

    def cpu_age(self) -> float:
        """The process's CPU seconds since the window opened: what recording costs grows with (a program
        waiting for data or for a busy machine records little; torch's own threads run its ops)."""
        return time.process_time() - self._cpu if self.prof is not None else 0.0

    def start(self) -> None:
        """Open a window."""
        begun_ns = time.time_ns()
        import torch
        from torch.autograd.profiler import profile

        # torch.autograd.profiler directly: torch.profiler.profile's start imports torch._inductor
        self.cuda = torch.cuda.is_available()
        self.sampling.opening(time.perf_counter())
        self._chain = self._ran_on.at_open()
        self._frozen = _freeze()  # before the profiler is made: its cycles are the window's garbage
        # every thread where torch can (threads.py; it records no allocations then)
        threads, self.sampling.window_memory = self.threads.window(
            self.sampling.window_memory, self.sampling.memory == "all"
        )
        with quiet_fd(2):
            prof = profile(
                use_kineto=True,
                use_device="cuda" if self.cuda else None,
                record_shapes=self.sampling.window_shapes,
                profile_memory=self.sampling.window_memory,
                with_stack=True,  # module paths: modules.py (with_modules: TorchScript only, deprecated in 2.15)
                experimental_config=threads,
            )
            prof._kernelscope_own = True  # type: ignore[attr-defined]  # not the program's own profiler (foreign.py)
            prof.__enter__()  # type: ignore[no-untyped-call]
            self._split = Split.resumed(self.safety.ranges.resume())  # (the program's ranges: safepoint.py)
        if self.triton is None and "triton" in sys.modules:
            from .triton.launches import LaunchRecorder

            self.triton = LaunchRecorder.install_if_available()
        self.prof = prof
        self._clean = self.background is None or not self.background.busy
        self.safety.opened()
        self.windows += 1
        self._paused(begun_ns)
        self._start = time.perf_counter()
        self._cpu = time.process_time()

    def _paused(self, begun_ns: int) -> None:
        if len(self.own_ns) < MAX_PAUSES:
            self.own_ns.append((begun_ns, time.time_ns()))

    def can_stop(self, finalizing: bool = False) -> bool:
        """Inside backward() the profiler cannot be stopped (safepoint.py): it stops after."""
        return self.prof is not None and (finalizing or not in_backward())

    def stop(self, compile_entry: bool = False, inline: bool = False) -> Closed:
        """Stop the open window (``can_stop`` first) and fold it, in the background where it can be (then the
        figures come through ``on_folded``; a window stopped while a child still folds the one before waits its
        turn); ``inline``: here and now (the last window)."""
        prof, self.prof = self.prof, None
        begun_ns = time.time_ns()
        start = time.perf_counter()
        window = start - self._start
        cpu = time.process_time() - self._cpu
        suspended = self.safety.ranges.suspend()  # (no range may outlive its window: safepoint.py)
        if suspended:
            self._split = dataclasses.replace(self._split or Split(), suspended=suspended)
        with quiet_fd(2):
            lost = stop_profiler(prof)  # (torch 2.5 may fail to post-process a window: torch_compat.py)
        stopped = time.perf_counter() - start
        if lost is None:
            self.recorded_seconds += window
        else:
            self.lost_windows += 1
        if lost is not None and lost not in self.warnings:
            self.warnings.append(lost)
        self._ran_on.at_close()
        self.threads.look()
        self.safety.stopped(compile_entry=compile_entry)
        snapshots = self.sampling.closed(self.recorded_seconds)
        t0 = time.perf_counter()
        events = 0
        ops = 0.0
        pending = queued = False
        shapes = self.sampling.window_shapes
        # (torch's profiler is stopped first: what taking the last window in runs here would be recorded)
        if not inline:
            self._advance(wait=False)
        if lost is None and not inline and self._can_fold_behind(window, cpu):
            closed = Closed(window, cpu, 0, 0.0, shapes=shapes)
            if len(self._queued) >= MAX_QUEUED:  # (as many wait their turn as may: this stop waits for the child)
                self._advance(wait=True)
            if self.folding:  # (a child still folds a window before: this one waits its turn)
                self._queued.append(
                    _Queued(prof.kineto_results, closed, snapshots, stopped, self._chain, self._split, os.getpid())
                )
                self.compile_spans.clear()
                self.queued += 1
                pending = queued = True
            elif self._foldable_behind(cpu):  # (the child waited for may have turned background folding off)
                pending = self._fold_behind(
                    prof.kineto_results, closed, snapshots, stopped, shapes=shapes, chain=self._chain, split=self._split
                )
        if not pending:
            self.settle()  # (folding here: the windows before first, window by window)
            results = prof.kineto_results if lost is None else None
            events, ops = self._fold_here(results, snapshots, shapes=shapes, chain=self._chain, split=self._split)
        # the profiler object sits in reference cycles with its results: break what we can and collect the
        # rest here, not in a later timed step (without the collection peak memory grows with the run). Results a
        # child folds are freed once it is done (``_adopt``): freed beside it, each page their free writes is
        # copied first (a child shares them copy-on-write), and on 2-ms steps the free of a 170,000-event window
        # took 1.1 s beside its child against 0.3-0.5 s after it (nanoGPT's loop ran no faster either way; the
        # peak holds one more window's results)
        if pending and not queued:
            self._results_behind = prof.kineto_results
        prof.kineto_results = None
        del prof
        folded = time.perf_counter()
        self.fold_time += folded - t0
        self._uncollected += events
        self._collect()
        self._paused(begun_ns)
        self.sampling.resumed(time.perf_counter())
        return Closed(window, cpu, events, ops, lost=lost is not None, pending=pending, shapes=shapes)

    def _can_fold_behind(self, window: float, cpu: float) -> bool:
        """May this window fold in a child? Not a short one (forking costs more than folding it), nor one whose
        program kept every core busy (background.py), nor where the fold reads or writes what only this process
        holds: torch.compile's capture, native sampling, the program's threads."""
        b = self.background
        return b is not None and self._foldable_behind(cpu) and b.usable() and b.room(window, cpu, self._clean)

    def _foldable_behind(self, cpu: float) -> bool:
        b = self.background
        return (
            b is not None
            and b.off is None
            and cpu >= BACKGROUND_MIN_CPU
            and self.compile is None
            and self.folder.native is None
            and not self.threads.functions
            and b.worth(cpu)
        )

    def turnover_wait(self) -> float:
        """How long the open window, stopped now, would fold beside the program (0: it would fold inline)."""
        cpu = self.cpu_age()
        if self.prof is None or self.background is None or not self._foldable_behind(cpu):
            return 0.0
        return self.background.fold_seconds(cpu)

    def _fold_behind(
        self,
        results: Any,
        closed: Closed,
        snapshots: tuple[bool, bool],
        stopped: float,
        *,
        shapes: bool,
        chain: Chain,
        split: Split | None,
    ) -> bool:
        self.compile_spans.clear()

        def fold() -> Folded:  # (in the child)
            queues = self.folder.scope_metrics
            sizes = {name: len(q) for name, q in queues.items()}
            notes = len(self.warnings)
            events = self._fold(results, shapes=shapes, continued=chain, split=split)
            state, converter = folder_state(self.folder)
            popped = {name: n - len(queues.get(name, ())) for name, n in sizes.items()}
            return Folded(events, state, converter, {k: n for k, n in popped.items() if n}, self.warnings[notes:])

        def adopt(folded: Folded | None, why: str | None, cow: float) -> None:  # (here, once the child is done)
            self._adopt(folded, why, dataclasses.replace(closed, cow=cow), snapshots)

        assert self.background is not None
        return self.background.fork(fold, adopt, closed.cpu, stopped)

    def _adopt(self, folded: Folded | None, why: str | None, closed: Closed, snapshots: tuple[bool, bool]) -> None:
        self._results_behind = None  # (the child is gone: no page of theirs is copied now)
        if folded is None or folded.folder is None or folded.converter is None:
            self.lost_windows += 1
            self.recorded_seconds -= closed.window
            note = f"a recorded window is lost: {why}; later windows fold in the program's process"
            if note not in self.warnings:
                self.warnings.append(note)
            final = Closed(closed.window, closed.cpu, 0, 0.0, lost=True, cow=closed.cow, shapes=closed.shapes)
        else:
            ops0 = self._op_seconds()
            adopt_state(self.folder, folded.folder, folded.converter)
            for name, n in (folded.popped or {}).items():
                queue = self.folder.scope_metrics.get(name)
                for _ in range(min(n, len(queue) if queue is not None else 0)):
                    queue.popleft()  # type: ignore[union-attr]
            self.warnings.extend(folded.notes or ())
            self.events += folded.events
            self.device_run = self.folder.device_run
            self._uncollected += folded.events
            self.sampling.folded(self.folder.builder, snapshots)
            ops = self._op_seconds() - ops0
            final = Closed(closed.window, closed.cpu, folded.events, ops, cow=closed.cow, shapes=closed.shapes)
        if self._polled_at is not None:  # (reading the child's result included)
            final = dataclasses.replace(final, adopt=time.perf_counter() - self._polled_at)
        if self._forked_at:  # (its child was forked at a checkpoint, after it waited its turn)
            final = dataclasses.replace(final, forked=self._forked_at)
            self._forked_at = 0.0
        if self.on_folded is not None:
            self.on_folded(final)

    def fold_foreign(self, prof: Any) -> None:
        """Fold what the program's own profiler recorded."""
        self.settle()
        t0 = time.perf_counter()
        self._fold(prof.kineto_results, shapes=bool(getattr(prof, "record_shapes", False)), continued=())
        self.fold_time += time.perf_counter() - t0

    def _fold_here(
        self, results: Any, snapshots: tuple[bool, bool], *, shapes: bool, chain: Chain, split: Split | None
    ) -> tuple[int, float]:
        """Fold a window in the program's process (``results`` None: it was lost); its events and op seconds."""
        events, ops = 0, 0.0
        if results is not None:
            ops0 = self._op_seconds()
            events = self._fold(results, shapes=shapes, continued=chain, split=split)
            ops = self._op_seconds() - ops0
        self.sampling.folded(self.folder.builder, snapshots)
        return events, ops

    def _fold(self, results: Any, *, shapes: bool, continued: Chain, split: Split | None = None) -> int:
        events = self.folder.fold(
            results,
            shapes=shapes,
            cuda=self.cuda,
            compile_capture=self.compile,
            notes=self.warnings,
            compiling=tuple(self.compile_spans),
            continued=continued,
            split=split,
        )
        self.compile_spans.clear()
        self.events += events
        self.device_run = self.folder.device_run
        return events

    def _op_seconds(self) -> float:
        b = self.folder.builder
        metric = "time_ns" if not self.device_run else "cpu_time_ns"
        return float(sum(b.metric_values(metric).values())) / 1e9

    def _collect(self) -> None:
        """Collect the window's garbage (the profiler's results sit in reference cycles: without it peak memory
        grows with the run). While the window was open every older object was frozen (``gc.freeze``), so the
        collection scans only what was made since, then the old objects are handed back to the collector as
        they were; a program that freezes objects itself gets a full collection now and then instead."""
        if self._frozen:
            gc.collect()
            gc.unfreeze()
            self._frozen = False
            self._uncollected = 0
        elif self._uncollected >= GC_EVENTS:
            gc.collect()
            self._uncollected = 0

    def clear(self) -> None:
        if self.background is not None:
            self.background.close()
        self._results_behind = None
        self._queued.clear()
        self.threads.remove()
        if self._frozen:
            gc.unfreeze()
            self._frozen = False
        self._ran_on.clear()


def _freeze() -> bool:
    """Freeze every object the process holds now, unless the program uses ``gc.freeze`` itself."""
    if gc.get_freeze_count() or not gc.isenabled():
        return False
    gc.freeze()
    return True
