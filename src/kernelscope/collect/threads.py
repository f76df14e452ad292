"""The program's own threads: recorded where torch can record every thread and stop doing so safely.

torch's profiler records the thread that starts it (and the threads that inherit its state: autograd's, a
``torch.jit.fork``). Since 2.8 ``_ExperimentalConfig(profile_all_threads=True)`` records every thread: the
profiler's state is global and its RecordFunction callbacks are global callbacks, and the Python tracer
(``with_stack``) is installed on every thread alive when the window opens. A session opens and stops hundreds
of windows while the program's threads run ops, which that mode does not survive on every version:
``benchmarks/every_thread_stress.py`` runs worker threads in ops through hundreds of window changes of the real
session, and ``EVERY_THREAD_SINCE`` is the first version that ran it clean (the counts are written next to it).

The session uses the mode once the program has a thread of its own (``ThreadWatch``: the threads it starts,
``threading.Thread.start`` hooked for the session, and the ones alive at a window's end); a program without one
records as before. Two limits of the mode, observed on 2.13 and 2.15 (``tests/test_every_thread.py``):

- it records no allocation events (the allocator looks for the profiler's state on its own thread only): once
  the program has a thread, sampled allocations stop (``--memory all`` keeps them, and this thread only);
- a thread started while a window is open is not traced by the Python tracer until the next window opens:
  its ops in that window have no Python caller, and the fold places them under the thread's function
  (``ThreadWatch.where``). A window that records this thread only is turned over as the thread starts.
"""

from __future__ import annotations

import functools
import re
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from types import FrameType
from typing import Any

from ..attribute.userframes import is_program_file

# benchmarks/every_thread_stress.py --runs 20 --windows 200 --mode forced (two worker threads in ops, a window
# change every 5 ms; 2026-11-26, the shared 2-core VM): torch 2.13.0 (CPU build) ended 15 of 24 runs cleanly,
# 7 with SIGSEGV, 1 with torch's "Invalid access on AppendOnlyList" internal assert, 1 stopped changing windows;
# torch 2.15.0 ran 40 of 40 cleanly (8000 window changes). The first version that ran it clean:
EVERY_THREAD_SINCE = (2, 15)
# Recording this thread only, torch's Python tracer (``with_stack``) still hooks every thread's Python calls.
# The same stress with the gate in place (this thread recorded): torch 2.5.1 ended 3 of 17 runs cleanly, 3 with
# SIGSEGV, 11 with windows it could not replay ("Python replay stack is empty"); torch 2.13.0 ended 9 of 11
# cleanly, 2 with a corrupt event name (a data race in the tracer: kernelscope stopped recording there, the
# program went on, but nothing bounds what else the race may do); none of it without the program's threads.
# Versions not measured between them are treated alike. Where the tracer may crash the program, nothing is
# recorded while a thread of the program's own runs (the program's result comes first); 2.15 records them.
TRACER_WITH_THREADS_SINCE = EVERY_THREAD_SINCE


@dataclass(frozen=True)
class EveryThread:
    """Whether this torch records the program's own threads, and why not when it does not."""

    enabled: bool
    why_not: str | None = None

    def config(self) -> Any | None:
        """The ``experimental_config`` of an every-thread window (None: this thread only)."""
        if not self.enabled:
            return None
        from torch._C._profiler import _ExperimentalConfig

        return _ExperimentalConfig(profile_all_threads=True)

    def note(self, watch: ThreadWatch) -> str | None:
        """The one line the profile carries about the program's threads (``watch``), if any."""
        threads = watch.names()
        if not threads:
            return None
        names = ", ".join(threads[:3])
        if self.enabled:
            if not watch.missed_windows:
                return None
            return (
                f"{len(threads)} other Python thread(s) of the program ran while recording ({names}): their torch "
                f"work is recorded except in the {watch.missed_windows} window(s) that sampled allocations "
                "(torch records no allocations while it records every thread; --memory off records every thread "
                "throughout)"
            )
        return (
            f"{len(threads)} other Python thread(s) of the program ran while recording ({names}): their torch work is "
            f"not in this profile, because {self.why_not}; run that work on the main thread while profiling to see it"
        )


@dataclass(frozen=True)
class Where:
    """A thread's function, shaped as the callsite of torch's Python-call events (the fold reads an op's
    calling function so: ``collect/torch_events.py``)."""

    file_name: str
    line_number: int  # its def line
    function_name: str

    @property
    def callsite(self) -> Where:
        return self


@dataclass
class ThreadWatch:
    """The program's own threads while the session runs: the ones it starts (``threading.Thread.start``, hooked
    for the session: the thread's function, by native thread id) and the ones seen at each window's end. They
    name the threads whose work is not recorded, turn over a window that records this thread only when the
    program starts one, and place the ops of a thread the Python tracer has not seen yet (``where``)."""

    seen: dict[int, str] = field(default_factory=dict)  # ident -> name
    functions: dict[int, Where] = field(default_factory=dict)  # native id -> the thread's function
    this_thread_windows: int = 0  # windows that recorded this thread only (allocations sampled: ``window``)
    missed_windows: int = 0  # of those, the ones in which a thread of the program ran (where torch has the mode)
    started_in_window: bool = False  # the program started a thread while a this-thread window was open
    starting: bool = False  # the program is starting a thread of its own (the hook runs before it exists)
    live: list[threading.Thread] = field(default_factory=list)  # the program's threads that may still run
    _this_thread_open: bool = False
    _missed_now: bool = False
    _rf_threads: dict[int, Where | None] = field(default_factory=dict)  # torch's thread id -> function
    _saved: Any = None
    _hook: Any = None

    def install(self, on_start: Callable[[], None]) -> None:
        """Hook ``threading.Thread.start``: ``on_start`` runs (on the starting thread) before a program thread
        starts, while it does not exist yet."""
        self.look()  # (threads the program started before the session)
        original = self._saved = threading.Thread.start
        watch = self

        @functools.wraps(original)
        def start(thread: threading.Thread) -> None:
            where = _function_of(thread)  # (before it starts: a thread that has run drops its target)
            ours = where is not None
            if ours:
                watch.started_in_window = watch.started_in_window or watch._this_thread_open
                watch.starting = True
                if threading.current_thread() is threading.main_thread():  # (windows turn over there only)
                    on_start()
            if ours and watch._this_thread_open and not watch._missed_now and every_thread().enabled:
                watch.missed_windows += 1  # (the window could not turn over here: the thread runs unrecorded)
                watch._missed_now = True
            try:
                original(thread)
            finally:
                watch.starting = False
            if where is not None:
                watch.live.append(thread)
                watch.seen.setdefault(thread.ident or 0, thread.name)
                if thread.native_id is not None:
                    watch.functions[thread.native_id] = where

        threading.Thread.start = start  # type: ignore[method-assign,assignment]
        self._hook = start

    def remove(self) -> None:
        if self._saved is not None and threading.Thread.start is self._hook:  # (never undo what came after)
            threading.Thread.start = self._saved  # type: ignore[method-assign]
        self._saved = self._hook = None

    def window(self, memory: bool, memory_asked: bool) -> tuple[Any | None, bool]:
        """(``experimental_config``, record allocations?) for the window about to open. Every thread is recorded
        once the program has a thread of its own (seen alive, or started while the session ran): a program
        without one records as on a torch without the mode. torch records no allocations in every-thread mode:
        the program's threads win over a sampled window's allocations (``memory``), not over allocations asked
        for in every window (``memory_asked``: ``--memory all``)."""
        mode = every_thread()
        threads = bool(self.seen) or self.started_in_window  # (a window turned over as one starts: it is coming)
        if not mode.enabled or not threads or (memory and memory_asked):
            self._opened(every=False)
            return None, memory
        self._opened(every=True)
        return mode.config(), False

    def _opened(self, every: bool) -> None:
        self._this_thread_open = not every
        self.started_in_window = False
        self._missed_now = False
        if not every:
            self.this_thread_windows += 1
            if self.seen and every_thread().enabled and program_threads():  # (allocations asked in every window)
                self.missed_windows += 1
                self._missed_now = True

    def unsafe(self) -> str | None:
        """Why recording must stop now: a thread of the program's own runs (or is starting) and this torch's
        Python tracer may crash the program then (``TRACER_WITH_THREADS_SINCE``); None when recording may go
        on (the program's threads ended: recording resumes)."""
        why = tracer_with_threads()
        if why is None:
            return None
        self.live = [t for t in self.live if t.is_alive()]
        return why if self.starting or self.live else None

    def due(self) -> bool:
        """Should the open window turn over (it records this thread only and the program started a thread)?"""
        return self._this_thread_open and self.started_in_window and every_thread().enabled

    def look(self) -> None:
        for t in program_threads():
            self.seen.setdefault(t.ident or 0, t.name)
            if t not in self.live:
                self.live.append(t)

    def names(self) -> list[str]:
        return list(self.seen.values())

    def where(self, results: Any, roots: list[Any]) -> dict[int, Where]:
        """torch's thread ids whose ops have no Python caller in this window (a thread started while it was
        open: the Python tracer covers the threads alive when a window opens), mapped to the function of the
        program's thread that ran them; the ops are placed under it (its def line: the line is not known)."""
        orphans: set[int] = set()
        traced: set[int] = set()
        for r in roots:
            (orphans if r.tag.name == "TorchOp" else traced).add(r.start_tid)
        orphans -= traced
        if not orphans:
            return {}
        unknown = orphans - self._rf_threads.keys()
        if unknown and self.functions:  # torch's thread id -> native thread id: Kineto's flat events say it
            for e in results.events():
                tid = e.start_thread_id()
                if tid in unknown:
                    self._rf_threads[tid] = self.functions.get(e.device_resource_id())
                    unknown.discard(tid)
                    if not unknown:
                        break
        return {tid: w for tid in orphans if (w := self._rf_threads.get(tid)) is not None}


@cache
def tracer_with_threads() -> str | None:
    """Why this torch's Python tracer must not run while the program has threads of its own (None: it may)."""
    version = _torch_version()
    if version >= TRACER_WITH_THREADS_SINCE:
        return None
    return (
        f"torch {_v(version)}'s Python tracer can crash a program whose own threads run while it records, so "
        f"nothing was recorded while the program's threads ran (torch {_v(TRACER_WITH_THREADS_SINCE)} and later "
        "record on)"
    )


def every_thread() -> EveryThread:
    """What the installed torch allows (decided once per process)."""
    return _decide(_torch_version(), _has_every_thread_mode())


def _decide(version: tuple[int, int], has_mode: bool) -> EveryThread:
    if not has_mode:
        return EveryThread(False, f"torch {_v(version)} records only the thread that started profiling")
    if version < EVERY_THREAD_SINCE:
        return EveryThread(
            False,
            f"torch {_v(version)} can crash when its every-thread recording stops while another thread runs ops "
            f"(torch {_v(EVERY_THREAD_SINCE)} and later record them)",
        )
    return EveryThread(True)


@cache
def _has_every_thread_mode() -> bool:
    from torch._C._profiler import _ExperimentalConfig

    try:
        _ExperimentalConfig(profile_all_threads=True)
    except TypeError:  # (before 2.8: no such keyword)
        return False
    return True


@cache
def _torch_version() -> tuple[int, int]:
    import torch

    major, minor = (int(p) for p in re.findall(r"\d+", torch.__version__)[:2])
    return major, minor


def _v(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


def program_threads() -> list[threading.Thread]:
    """Threads alive now that the program started, as far as can be told: its own code is on the thread's stack
    or is what the thread runs. Workers that torch or a library started (Inductor's compile pool, a tokenizer's
    pool), idle in library code, are not the program's: their work is the library's."""
    frames = sys._current_frames()
    out = []
    for t in threading.enumerate():
        if t is threading.main_thread() or not t.is_alive() or t.daemon or t.name.startswith("kernelscope"):
            continue
        if _runs_program_code(t) or _program_on_stack(frames.get(t.ident or -1)):
            out.append(t)
    return out


def _function_of(t: threading.Thread) -> Where | None:
    """The function the thread runs: its target, else its class's ``run``."""
    target = getattr(t, "_target", None)
    run = type(t).run
    for fn in (target, run if run is not threading.Thread.run else None):
        code = getattr(getattr(fn, "__func__", fn), "__code__", None)
        if code is not None and is_program_file(code.co_filename):
            return Where(code.co_filename, code.co_firstlineno, code.co_name)
    return None


def _runs_program_code(t: threading.Thread) -> bool:
    return _function_of(t) is not None


def _program_on_stack(frame: FrameType | None) -> bool:
    while frame is not None:
        if is_program_file(frame.f_code.co_filename):
            return True
        frame = frame.f_back
    return False


__all__ = ["EVERY_THREAD_SINCE", "EveryThread", "ThreadWatch", "every_thread", "program_threads"]
