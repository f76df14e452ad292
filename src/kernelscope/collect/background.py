"""Folding a window off the program's critical path: in a forked child, while the program runs on.

Stopping a window has two parts. torch's own stop (``profile.__exit__``) must run in the program: it ends the
recording. Folding the stopped window's events into the tree (``WindowFolder.fold``: reading torch's event tree
through its bindings, then the engine) reads only memory the stop left behind, and costs more than the stop
(benchmarks/step_cost.py). So after the stop the process forks; the child folds the window into its copy of
the folder and writes the folder's state back (a few kB: the tree and the engine's carry-over, never events);
the program runs on at once. The next stop, the finalize and any reader of the tree first adopt the child's
state (``settle``); between them the session polls (``poll``) so that the accounts learn each window's figures
soon after it folded.

One child at a time, so the folder's state is always the parent's plus at most one window (a window stopped
meanwhile waits its turn in the recorder: recorder.py). A child that fails
loses its window (said in a warning, counted as a lost window) and background folding stops for the run. So it
does where no core is free:
- a process with one core;
- a child that got less than ``FREE_CORE_SHARE`` of a core while it folded (it competed with the program, which
  then runs slower than with the fold inline);
- a window that no child ran beside, in which the program itself kept every core busy (its CPU seconds over the
  window's wall seconds leave less than ``FREE_CORE_LEFT`` of a core: torch's intra-op threads on a CPU run). A
  child beside such a program takes a core its threads wait for: on the 2-core VM the tiny-op program (two
  intra-op threads) ran its recorded part 3 times slower beside a child (recorded op time 4.8 s, against 1.6 s with
  the fold inline), and its profile said so. Beside a child the program's share understates what it asks for, so
  only a window without one decides.

A fork is not free for the program: its memory is shared with the child copy-on-write, so each page the program
writes after the fork faults and is copied (the first write after the child is gone still faults). The program
pays this in its own steps: nanoGPT on the 2-core VM, 16,000 more minor faults and 38 ms more over the 6 steps after a
fork at batch 8, 45,000 and 115 ms at batch 32, 2.4-2.6 µs a fault (``benchmarks/fork_cost.py``). The faults a run
takes while a child lives, less the program's own rate of them without one, are charged to kernelscope's cost at
2.2 µs each (``copy_on_write_seconds``; the faults after the child is gone are left out), and a window whose fold
inline would cost less than the last fork's faults folds inline: at batch 32 the budget's one-step windows cost the
program more in faults than their folds.

Where the fold touches state that lives only in the parent (torch.compile's capture, native sampling, the
program's own threads, the shape and allocation sample), windows are folded inline, as without this.
Linux only (``os.fork``); elsewhere, and with ``run --fold inline``, every window folds inline.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import shutil
import signal
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

FORK_AVAILABLE = sys.platform.startswith("linux") and hasattr(os, "fork")
# A child that got less than this share of a core while it folded competed with the program for one: there is no
# free core (a busy neighbour, a one-core container), and folding beside the program slows it down. Later windows
# fold inline.
FREE_CORE_SHARE = 0.75
# A window in which the program's own threads left less than this share of a core idle: no core is free for a
# child (see ``BackgroundFold.room``).
FREE_CORE_LEFT = 0.75
# A child shares the program's memory copy-on-write: every page the program writes while the child folds (its
# parameters and optimizer state, on a CPU run, each step) is copied. No child where a copy of all of the
# program's memory would take more than this share of what the machine has available.
MEMORY_SHARE = 0.5
# What one copy-on-write fault costs the program (a page copied, or made writable again): see the docstring.
FAULT_SECONDS = 2.2e-6
FREE_RATE_SECONDS = 0.5  # seconds without a child after which the program's own fault rate is known
# How long a child folds a window, per second torch's stop of it took in the program, before a child has been
# measured. Both grow with the window's events (the stop post-processes them, the fold reads them through torch's
# bindings), where the window's CPU time does not: a 2-ms-step program's windows hold ten times the events a CPU
# second of its set-up does. On the 2-core VM children took 1.1-2.0x their window's stop (nanoGPT, 2-ms steps),
# and 0.8-4.6 s per CPU second of the window (benchmarks/README.md, "What a stop pays on top of its projection")
FOLD_PER_STOP = 2.0
FOLD_PER_CPU = 1.5  # the same per CPU second of the window, for a window not stopped yet
MEASURED_STOP = 0.05  # torch's stop took this long at least: the child's time is mostly its window's, not fixed
MEASURED_CPU = 0.1  # the same for a window's CPU seconds
MEASURED_SHARE = 0.05  # a child folded this long at least: its share of a core says whether a core was free
# the folder's own attributes that live in the parent (callbacks, samplers, hooks): never sent back
_PARENT_ONLY = frozenset({"events", "threads", "native", "scope_metrics"})
_EVENTS_PARENT_ONLY = frozenset({"module_path"})


@dataclass
class Folded:
    """What a child sends back: the folder's state after the window, or why it failed."""

    events: int = 0
    folder: dict[str, Any] | None = None
    converter: dict[str, Any] | None = None
    popped: dict[str, int] | None = None  # scope-metric entries the fold used, per scope name
    notes: list[str] | None = None  # warnings the fold added
    cpu: float = 0.0  # the child's CPU seconds
    wall: float = 0.0  # the child's wall seconds, folding
    error: str | None = None


@dataclass
class Child:
    pid: int
    path: str
    adopt: Callable[[Folded | None, str | None, float], None]  # the recorder's bookkeeping once the window is in
    started: float = 0.0  # perf_counter when it was forked
    window_cpu: float = 0.0  # the CPU seconds of the window it folds
    stop: float = 0.0  # the wall seconds torch's stop of that window took in the program
    faults: int = 0  # the process's minor faults when it was forked
    parent: int = 0  # the process that forked it: only that one takes its window in


class BackgroundFold:
    """Forks one child per window and adopts what it folded."""

    def __init__(self) -> None:
        self.child: Child | None = None
        self.off: str | None = None  # why background folding stopped for this run
        self.windows = 0  # windows folded in a child
        self.cpu = 0.0  # the children's CPU seconds
        self.waited = 0.0  # wall seconds the program waited for a child
        self._fold_wall = 0.0  # the children's wall seconds folding ...
        self._fold_window_cpu = 0.0  # ... for windows of this many CPU seconds
        self._fold_cpu = 0.0  # the children's CPU seconds folding those windows
        self._stop_fold = 0.0  # the children's wall seconds folding ...
        self._stop = 0.0  # ... windows whose stops took this many seconds
        self.cow = 0.0  # seconds of copy-on-write faults charged (see the docstring)
        self.last_cow: float | None = None  # ... for the last fork
        # since when no child runs (counted from the first child's end: set-up allocates at a rate of its own)
        self._free: tuple[float, int] | None = None
        self._free_seconds = 0.0  # seconds without a child ...
        self._free_faults = 0  # ... and the faults the program took in them
        self._dir: str | None = None
        self._dir_owner = 0  # the process that made it (a forked copy of the program leaves it alone)

    @property
    def busy(self) -> bool:
        return self.child is not None

    def usable(self) -> bool:
        if self.off is None and not FORK_AVAILABLE:
            self.off = "this platform cannot fork"
        if self.off is None and _cores() < 2:
            self.off = "one core: no core is free beside the program"
        return self.off is None

    def room(self, window: float, cpu: float, clean: bool) -> bool:
        """Did the program leave a core free while the window was open (``cpu`` seconds of the process over
        ``window`` wall seconds)? Only a ``clean`` window (no child ran beside it) can tell: beside a child the
        program's threads get less than they ask for. Where it did not, background folding stops for the run.
        Nor is there room where a copy of the program's memory would not fit (``MEMORY_SHARE``)."""
        if self.off is None:
            held, free = _memory()
            if held is not None and free is not None and held > MEMORY_SHARE * free:
                self.off = (
                    f"no room in memory for a child: the program holds {held / 2**30:.1f} GB, the machine has "
                    f"{free / 2**30:.1f} GB available (a child shares its memory copy-on-write); windows fold inline"
                )
        if not clean or window <= 0:
            return self.off is None
        used = cpu / window
        if _cores() - used >= FREE_CORE_LEFT:
            return self.off is None
        self.off = (
            f"no free core: the program's own threads kept {used:.1f} of {_cores()} cores busy while it was "
            "recorded (torch's intra-op threads); windows fold inline"
        )
        return False

    def worth(self, window_cpu: float) -> bool:
        """Is a child worth its copy-on-write faults for a window of ``window_cpu`` CPU seconds: would folding it
        here cost more than the last fork's faults cost the program? (Yes until both are measured.)"""
        if self.last_cow is None or self._fold_window_cpu <= 0:
            return True
        return window_cpu * self._fold_cpu / self._fold_window_cpu > self.last_cow

    def fork(
        self,
        fold: Callable[[], Folded],
        adopt: Callable[[Folded | None, str | None, float], None],
        window_cpu: float = 0.0,
        stop: float = 0.0,
    ) -> bool:
        """Run ``fold`` in a child (of a window of ``window_cpu`` CPU seconds, whose stop took ``stop`` seconds);
        False (nothing started) when the process could not fork."""
        self.settle()
        try:
            if self._dir is None:
                self._dir, self._dir_owner = tempfile.mkdtemp(prefix="kernelscope-fold-"), os.getpid()
            path = os.path.join(self._dir, f"window-{self.windows}.pickle")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)  # (3.12+: fork of a threaded process)
                faults, now = _minor_faults(), time.perf_counter()
                pid = os.fork()
        except OSError as exc:  # (no temporary folder, or no fork: the window folds inline)
            self.off = f"could not fork ({exc.strerror or exc})"
            return False
        if pid == 0:  # the child: fold, write, leave without running anything of the program's
            _child(fold, path)
        if self._free is not None:
            self._free_seconds += now - self._free[0]
            self._free_faults += faults - self._free[1]
            self._free = None
        self.child = Child(pid, path, adopt, now, window_cpu, stop, faults, os.getpid())
        self.windows += 1
        return True

    def poll(self) -> None:
        """Adopt the child's window if it has finished; never waits."""
        c = self.child
        if c is None or self._forked_copy(c):
            return
        try:
            done, status = os.waitpid(c.pid, os.WNOHANG)
        except ChildProcessError:  # reaped by someone else (a SIGCHLD handler of the program's)
            done, status = c.pid, -1
        if done:
            self._adopt(c, status)

    def fold_seconds(self, window_cpu: float, stop: float = 0.0) -> float:
        """How long a child takes to fold a window of ``window_cpu`` CPU seconds: where its stop took ``stop``
        seconds, from how long children took per second of their windows' stops (``FOLD_PER_STOP`` before one was
        measured); for a window not stopped yet, per CPU second of their windows (``FOLD_PER_CPU``)."""
        if stop > 0:
            return stop * (self._stop_fold / self._stop if self._stop > 0 else FOLD_PER_STOP)
        return window_cpu * (self._fold_wall / self._fold_window_cpu if self._fold_window_cpu > 0 else FOLD_PER_CPU)

    def expected_wait(self) -> float:
        """How long stopping a window now would wait for the child still folding."""
        c = self.child
        if c is None:
            return 0.0
        return max(self.fold_seconds(c.window_cpu, c.stop) - (time.perf_counter() - c.started), 0.0)

    def settle(self) -> None:
        """Wait for the child, if one runs, and adopt its window."""
        c = self.child
        if c is None or self._forked_copy(c):
            return
        t0 = time.perf_counter()
        status = -1
        with contextlib.suppress(ChildProcessError):  # (reaped by someone else: the result file says the rest)
            _, status = os.waitpid(c.pid, 0)
        self.waited += time.perf_counter() - t0
        self._adopt(c, status)

    def _forked_copy(self, c: Child) -> bool:
        """Is this a copy of the program forked after ``c`` was (a DataLoader worker, a ``multiprocessing`` process)?
        Such a copy runs the session's hooks too: taking the child's window in there, a DataLoader's two workers read
        and deleted its result before the program could, and the window was lost. The copy forgets the child and its
        folder (the program removes it), and folds its own windows inline."""
        if c.parent == os.getpid():
            return False
        self.child, self._dir, self.off = None, None, self.off or "a forked copy of the program: windows fold inline"
        return True

    def close(self) -> None:
        self.settle()
        if self._dir is not None and self._dir_owner == os.getpid():
            shutil.rmtree(self._dir, ignore_errors=True)
        self._dir = None

    def _adopt(self, c: Child, status: int) -> None:
        self.child = None
        now, faults = time.perf_counter(), _minor_faults()
        self._free = (now, faults)
        own_rate = self._free_faults / self._free_seconds if self._free_seconds >= FREE_RATE_SECONDS else 0.0
        cow = max(faults - c.faults - own_rate * (now - c.started), 0.0) * FAULT_SECONDS
        self.cow += cow
        self.last_cow = cow
        folded: Folded | None = None
        why = None
        try:
            with open(c.path, "rb") as fh:
                folded = pickle.load(fh)
        except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ValueError) as exc:
            why = f"the background fold ended without a result (exit status {status}; {type(exc).__name__})"
        with contextlib.suppress(OSError):
            os.unlink(c.path)
        if folded is not None and folded.error is not None:
            why, folded = f"the background fold failed ({folded.error})", None
        if folded is not None:
            self.cpu += folded.cpu
            if c.window_cpu >= MEASURED_CPU:  # (a short window's child is mostly its fixed cost)
                self._fold_wall += folded.wall
                self._fold_cpu += folded.cpu
                self._fold_window_cpu += c.window_cpu
            if c.stop >= MEASURED_STOP:
                self._stop_fold += folded.wall
                self._stop += c.stop
            share = folded.cpu / folded.wall if folded.wall > 0 else 1.0
            if folded.wall >= MEASURED_SHARE and share < FREE_CORE_SHARE:
                self.off = (
                    f"no free core: a window folded at {100 * share:.0f}% of a core beside the program "
                    "(a busy machine); later windows fold inline"
                )
        else:
            self.off = why
        c.adopt(folded, why, cow)

    def metadata(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "windows": self.windows,
            "cpu_seconds": round(self.cpu, 4),
            "waited_seconds": round(self.waited, 4),
            "copy_on_write_seconds": round(self.cow, 4),
        }
        if self.off is not None:
            out["stopped"] = self.off
        return out


def _child(fold: Callable[[], Folded], path: str) -> None:
    code = 1
    try:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # the parent saves; this finishes its window
            signal.signal(sig, signal.SIG_IGN)
        import gc

        gc.disable()  # short-lived: its garbage goes with it
        cpu0, wall0 = time.process_time(), time.perf_counter()
        try:
            result = fold()
        except Exception as exc:
            result = Folded(error=f"{type(exc).__name__}: {exc}"[:300])
        result.cpu, result.wall = time.process_time() - cpu0, time.perf_counter() - wall0
        tmp = path + ".tmp"
        with open(tmp, "wb") as fh:
            pickle.dump(result, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
        code = 0
    finally:
        os._exit(code)


def _minor_faults() -> int:
    """The process's minor page faults so far (0 where the platform does not count them)."""
    try:
        import resource
    except ImportError:  # (not on Windows; nor is fork)
        return 0
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_minflt)


def _memory() -> tuple[int | None, int | None]:
    """The process's resident bytes and the machine's available bytes (Linux's /proc; None where unknown)."""
    held = free = None
    try:
        with open("/proc/self/statm", encoding="ascii") as fh:
            held = int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    free = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    return held, free


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def folder_state(folder: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The folder's and its event converter's attributes that the child sends back (one pickle, so the objects
    they share, the tables and the warnings, stay shared)."""
    return (
        {k: v for k, v in vars(folder).items() if k not in _PARENT_ONLY},
        {k: v for k, v in vars(folder.events).items() if k not in _EVENTS_PARENT_ONLY},
    )


def adopt_state(folder: Any, state: dict[str, Any], converter: dict[str, Any]) -> None:
    vars(folder).update(state)
    vars(folder.events).update(converter)
