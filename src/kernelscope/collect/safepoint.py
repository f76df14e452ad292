"""When torch's profiler may be started again without harm.

Why this exists (torch 2.13, checked in ``profiler_kineto.cpp``): the profiler's RecordFunction
exit callback writes the end time into the event its *enter* callback created, looking up the
profiler state only to see whether one exists. A RecordFunction (an op, a ``record_function``
range, ``Optimizer.step#...``, an autograd ``Function.apply``, a ``Torch-Compiled Region``) that
began under one profiler window and ends after the next window started therefore writes into freed
memory: a crash, or a random event of the new window that suddenly lasts seconds. Stopping alone is
safe (with no profiler the exit callback returns early), and so is a RecordFunction that began while
no profiler ran: it carries no profiler state at all.

So the question at a point of the main thread is: *could a RecordFunction begun under a window still
be open here?* RecordFunctions that hold the stack while Python runs are held by Python frames:

- ``record_function`` ranges (Python context managers): counted exactly, by wrapping their enter
  and exit, and only those entered while a window was open;
- the frames of torch's own code, other than the ones known to hold none (``nn.Module``'s call
  machinery, ``OptimizedModule``'s call and Dynamo's frame wrapper), may sit on top of one: an
  optimizer's ``step``, checkpointing, ``autograd.Function.apply``, ``backward``;
- a frame running code that Dynamo generated runs inside its ``Torch-Compiled Region``.

``StackSafety`` keeps the answer across windows:

- a window may be *turned over* (closed and a new one opened) where no such frame is on the stack;
- a window may be *stopped* anywhere; the frames on the stack at that point that may hold a
  RecordFunction are remembered (``dirty``, strong references dropped as soon as they leave the
  stack), and a new window may open anywhere none of them is still on the stack: every frame that
  started after the stop began its RecordFunctions with no profiler running.

One place is never safe even to stop: inside autograd's engine (``backward()``). The engine runs the
backward pass under a copy of the caller's thread-local state, which holds the profiler's; a profiler
stopped there is back, enabled, when ``backward()`` returns (torch 2.13: "Profiler is already enabled
on this thread" at the next start). ``in_backward()`` says so; the session stops after it.

A program with an optimizer closure, a compiled module or a loop with no module call therefore gets
a new window as soon as the frames of the stopped one are gone, wherever that is.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any

from .own_frames import program_frame

# torch files whose frames never hold a RecordFunction open while they call out (read in torch 2.13):
# nn.Module's call machinery; OptimizedModule.__call__ and Dynamo's frame wrapper (its compiled code
# runs in a frame of its own, recognised by its code object); the decorator form of no_grad/inference_mode/
# enable_grad (``_contextlib.decorate_context``: it sets the grad mode and calls), which wraps whole
# functions such as ``generate()``.
_RF_FREE = tuple(
    os.sep + os.path.join("torch", *parts)
    for parts in (("nn", "modules", "module.py"), ("_dynamo", "eval_frame.py"), ("utils", "_contextlib.py"))
)
# Frames below Dynamo's ``_compile`` at its entry: the conversion wrappers open no RecordFunction
# before they call it (``_compile`` itself does, ``dynamo_timed``): safe at that one point only.
_COMPILE_ENTRY = tuple(
    os.sep + os.path.join("torch", *parts) for parts in (("_dynamo", "convert_frame.py"), ("_utils_internal.py",))
)


class RangeCounter:
    """Counts ``torch.autograd.profiler.record_function`` ranges open on the main thread that were
    entered while a window was open (``recording()`` says so)."""

    def __init__(self, recording: Callable[[], bool] = lambda: True) -> None:
        self.open = 0
        self._recording = recording
        self._saved: tuple[Any, Any] | None = None

    def install(self) -> None:
        from torch.autograd import profiler as autograd_profiler

        cls = autograd_profiler.record_function
        enter, exit_ = cls.__enter__, cls.__exit__
        counter = self
        main = threading.main_thread()

        def counted_enter(rf: Any) -> Any:
            out = enter(rf)  # type: ignore[no-untyped-call]
            if threading.current_thread() is main and counter._recording():
                rf._kernelscope_counted = True
                counter.open += 1
            return out

        def counted_exit(rf: Any, *exc: Any) -> Any:
            if getattr(rf, "_kernelscope_counted", False):
                rf._kernelscope_counted = False
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
def _torch_file(file: str, torch_dir: str) -> str | None:
    """The path of ``file`` if it is torch's own code, else None."""
    if file.startswith(torch_dir):
        return file
    real = os.path.realpath(file) if os.path.isabs(file) else file
    return real if real.startswith(torch_dir) else None


def _dynamo_codes() -> Any:
    """Dynamo's set of the code objects it generated (None until Dynamo is imported)."""
    mod = sys.modules.get("torch._dynamo.convert_frame")
    return getattr(mod, "output_codes", None)


def may_hold_rf(code: CodeType, allow: tuple[str, ...] = _RF_FREE, dynamo: Any = None) -> bool:
    """Could a frame running ``code`` sit on top of an open RecordFunction?"""
    if dynamo is not None and code in dynamo:
        return True  # Dynamo's compiled code runs inside its Torch-Compiled Region
    file = _torch_file(code.co_filename, _torch_dir())
    return file is not None and not file.endswith(allow)


def in_backward() -> bool:
    """Is this thread running autograd's engine (see the module's docstring)?"""
    import torch

    return bool(torch._C._current_graph_task_id() != -1)


class StackSafety:
    """Where a window may open or turn over (see the module's docstring). Main thread only."""

    def __init__(self) -> None:
        self.ranges = RangeCounter(self._recording)
        self.window_open = False
        self._dirty: dict[int, FrameType] = {}  # frames on the stack when a window stopped unsafely

    def _recording(self) -> bool:
        return self.window_open

    def install(self) -> None:
        self.ranges.install()

    def remove(self) -> None:
        self.ranges.remove()
        self._dirty.clear()

    @staticmethod
    def _frames() -> list[FrameType]:
        """The program's frames on this thread, innermost first (own_frames.py)."""
        frames: list[FrameType] = []
        frame = program_frame()
        while frame is not None:
            frames.append(frame)
            frame = frame.f_back
        return frames

    def _holders(self, frames: list[FrameType], allow: tuple[str, ...] = _RF_FREE) -> list[FrameType]:
        dynamo = _dynamo_codes()
        return [f for f in frames if may_hold_rf(f.f_code, allow, dynamo)]

    def can_turn_over(self) -> bool:
        """A window is open: may it be closed and a new one opened here?"""
        if threading.current_thread() is not threading.main_thread() or self.ranges.open > 0:
            return False
        return not self._holders(self._frames())

    def can_open(self) -> bool:
        """No window is open: may one open here?"""
        if threading.current_thread() is not threading.main_thread() or self.ranges.open > 0:
            return False
        if not self._dirty:
            return True
        frames = self._frames()
        live = {id(f) for f in frames}
        for key in [k for k in self._dirty if k not in live]:
            del self._dirty[key]  # gone from the stack: whatever it held is closed
        return not self._dirty

    def opened(self) -> None:
        self.window_open = True

    def stopped(self, compile_entry: bool = False) -> bool:
        """A window was stopped here: remember what may still hold its RecordFunctions. True when
        nothing does (a new window may then open anywhere)."""
        self.window_open = False
        allow = _RF_FREE + _COMPILE_ENTRY if compile_entry else _RF_FREE
        if threading.current_thread() is threading.main_thread():
            frames = self._frames()
        else:  # stopped from another thread: what the main thread is running now
            frames = []
            frame: FrameType | None = sys._current_frames().get(threading.main_thread().ident or 0)
            while frame is not None:
                frames.append(frame)
                frame = frame.f_back
        held = self._holders(frames, allow)
        self._dirty.update((id(f), f) for f in held)
        return not held
