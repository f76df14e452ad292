"""When torch's profiler may be stopped and started again without harm.

Why this exists (torch 2.13, checked in ``profiler_kineto.cpp``): the profiler's RecordFunction
exit callback writes the end time into the event its *enter* callback created, looking up the
profiler state only to see whether one exists. A RecordFunction (an op, a ``record_function``
range, ``Optimizer.step#...``, an autograd ``Function.apply``) that began in one profiler window
and ends after the next window started therefore writes into freed memory: a crash, or a random
event of the new window that suddenly lasts seconds. Stopping alone is safe (with no profiler the
exit callback returns early); *restarting* is only safe when nothing begun under the old window
is still open on a profiled thread.

Profiled threads are the thread that started the profiler and the threads that inherit its
thread-local state (autograd's engine threads, which finish inside ``backward()``); Python
threads started by the program are not profiled. So a restart is safe at a point of the main
thread where:

- no C++ frame that holds a RecordFunction sits below us: no Python frame on the stack is torch's
  own code other than ``nn.Module``'s call machinery — a frame in any other torch file (an
  optimizer, checkpointing, ``autograd.Function.apply``) may sit on top of an op in flight;
- no ``record_function`` range is open (they are Python context managers: counted by wrapping
  their enter/exit while a session lives).
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from types import FrameType
from typing import Any

_MODULE_CALL = os.sep + os.path.join("torch", "nn", "modules", "module.py")


class RangeCounter:
    """Counts ``torch.autograd.profiler.record_function`` ranges open on the main thread."""

    def __init__(self) -> None:
        self.open = 0
        self._saved: tuple[Any, Any] | None = None

    def install(self) -> None:
        from torch.autograd import profiler as autograd_profiler

        cls = autograd_profiler.record_function
        enter, exit_ = cls.__enter__, cls.__exit__
        counter = self
        main = threading.main_thread()

        def counted_enter(rf: Any) -> Any:
            out = enter(rf)  # type: ignore[no-untyped-call]
            if threading.current_thread() is main:
                counter.open += 1
            return out

        def counted_exit(rf: Any, *exc: Any) -> Any:
            if threading.current_thread() is main:
                counter.open -= 1
            return exit_(rf, *exc)

        self._saved = (enter, exit_)
        cls.__enter__ = counted_enter  # type: ignore[method-assign]
        cls.__exit__ = counted_exit  # type: ignore[method-assign]

    def remove(self) -> None:
        if self._saved is None:
            return
        from torch.autograd import profiler as autograd_profiler

        cls = autograd_profiler.record_function
        cls.__enter__, cls.__exit__ = self._saved  # type: ignore[method-assign]
        self._saved = None


@functools.cache
def _torch_dir() -> str:
    import torch

    return os.path.dirname(os.path.realpath(torch.__file__)) + os.sep


@functools.lru_cache(maxsize=4096)
def _file_is_safe(file: str, torch_dir: str) -> bool:
    """A frame in torch's own code may sit on top of an op in flight; ``nn.Module``'s call machinery does not."""
    if not file.startswith(torch_dir):
        real = os.path.realpath(file) if os.path.isabs(file) else file
        if not real.startswith(torch_dir):
            return True
    return file.endswith(_MODULE_CALL)


def restart_is_safe(ranges: RangeCounter) -> bool:
    """True when stopping and starting the profiler here cannot leave a RecordFunction open across it."""
    if threading.current_thread() is not threading.main_thread() or ranges.open > 0:
        return False
    torch_dir = _torch_dir()
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if not _file_is_safe(frame.f_code.co_filename, torch_dir):
            return False
        frame = frame.f_back
    return True
