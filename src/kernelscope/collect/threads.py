"""Ops on the threads a program starts: when a window may record every thread, and the allocation sample.

A window records either every thread (``profile_all_threads``: torch's callbacks are global) or the main
thread only. An op that another thread began under an every-thread window and ends after that window
stopped ends under whatever session is on then: under another every-thread session torch 2.13 writes its
end into the stopped session's freed event (heap corruption: seen as ``unaligned tcache chunk detected``
aborts), under a main-thread session or none it is dropped. kernelscope's safe points cover the main
thread only, so ``AllThreads`` allows an every-thread window only when no other thread that was alive
under an earlier every-thread window is still alive: the ops of a thread the program starts are recorded
until the first window change while it runs, and windows record the main thread only until it ends.

torch traces Python only on the threads running when a window opens, so a thread started inside a window
has its ops on its own track without their lines. torch 2.13 records no allocation under
``profile_all_threads``, so the window that samples allocations records the main thread only;
``ThreadStarts`` ends that sample as the program starts a thread (``threading.Thread.start`` tells the
session first, which turns the window over, where that is safe, to one that records every thread: the new
thread has begun nothing under any window yet).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


def _others() -> set[int]:
    main = threading.main_thread()
    return {t.ident for t in threading.enumerate() if t is not main and t.ident is not None}


class AllThreads:
    """May the next window record every thread? Remembers the threads alive under every-thread windows."""

    def __init__(self) -> None:
        self._exposed: set[int] = set()  # other threads alive when an every-thread window stopped
        self.held = False  # a window recorded the main thread only because of such a thread

    def may_open(self) -> bool:
        if self._exposed:
            self._exposed &= _others()  # ended threads can hold nothing
        held = bool(self._exposed)
        self.held = self.held or held
        return not held

    def closed(self, all_threads: bool) -> None:
        """A window stopped; ``all_threads``: it recorded every thread."""
        if all_threads:
            self._exposed |= _others()


class ThreadStarts:
    """Calls ``on_start`` on the thread that starts another, before it starts (while installed)."""

    def __init__(self, on_start: Callable[[], None]) -> None:
        self._on_start = on_start
        self._original: Any = None

    def install(self) -> None:
        if self._original is not None:
            return
        original = self._original = threading.Thread.start
        on_start = self._on_start

        def start(thread: threading.Thread) -> None:
            on_start()
            original(thread)

        start.__doc__ = original.__doc__
        threading.Thread.start = start  # type: ignore[method-assign,assignment]

    def remove(self) -> None:
        if self._original is not None:
            threading.Thread.start = self._original  # type: ignore[method-assign]
            self._original = None
