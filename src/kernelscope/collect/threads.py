"""Ops on the threads a program starts: torch's profiler on every thread, and the allocation sample.

Windows record with ``profile_all_threads``, so the ops of threads the program starts are recorded (torch
traces Python only on the threads running when a window opens: a thread started inside a window has its
ops on its own track, without their lines). torch 2.13 records no allocation under ``profile_all_threads``,
so the window that samples allocations records the main thread only. ``ThreadStarts`` ends that sample
as the program starts a thread: ``threading.Thread.start`` tells the session first, which turns the
window over (where that is safe) to one that records every thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


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
