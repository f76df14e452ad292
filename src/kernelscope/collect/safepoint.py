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

- ``record_function`` ranges (Python context managers, also what an optimizer's ``step``, the DataLoader
  and DDP open): ``Ranges`` keeps every one open on the main thread and *splits* it at each stop: it ends
  the range's RecordFunction before the window stops and begins a new one, under the same name, as the
  next window opens. A range so never outlives its window, and one that spans windows shows in each
  (the fold counts it once: ``continued.py``). A range whose end was handed to a future
  (``_call_end_callbacks_on_future``) cannot be split: it holds the stack until it ends;
- the frames of torch's own code, other than the ones known to hold none (``nn.Module``'s call
  machinery, ``OptimizedModule``'s call and Dynamo's frame wrapper, the optimizers, the DataLoader), may
  sit on top of one: checkpointing, ``autograd.Function.apply``, ``backward``, an op calling Python;
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

An optimizer closure (LBFGS: the whole step runs inside ``optimizer.step``) or a step inside a
``record_function`` range turns windows over between its ops; a program with a compiled module or a loop
with no module call gets a new window as soon as the frames of the stopped one are gone, wherever that is.
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
# functions such as ``generate()``; the optimizers (``step`` calls an LBFGS closure) and the DataLoader,
# whose only RecordFunctions are ``record_function`` ranges, split at every stop (``Ranges``).
_RF_FREE = tuple(
    os.sep + os.path.join("torch", *parts)
    for parts in (("nn", "modules", "module.py"), ("_dynamo", "eval_frame.py"), ("utils", "_contextlib.py"))
)
_RF_FREE_DIRS = tuple(os.sep + os.path.join("torch", *parts) + os.sep for parts in (("optim",), ("utils", "data")))
# Frames below Dynamo's ``_compile`` at its entry: the conversion wrappers open no RecordFunction
# before they call it (``_compile`` itself does, ``dynamo_timed``): safe at that one point only.
_COMPILE_ENTRY = tuple(
    os.sep + os.path.join("torch", *parts) for parts in (("_dynamo", "convert_frame.py"), ("_utils_internal.py",))
)

# A range's RecordFunction: begun under the open window, ended at a stop (``suspend``: ending it again at the
# range's exit does nothing), begun with no window open (it carries no profiler state: harmless anywhere), or
# begun under a window with its end handed to a future (it cannot be split: it holds the stack until it ends).
LIVE, SUSPENDED, INERT, HELD = "live", "suspended", "inert", "held"


class Ranges:
    """The ``torch.autograd.profiler.record_function`` ranges open on the main thread, outermost first,
    each with its state and the frame that entered it. ``suspend`` ends the live ones before a window
    stops; ``resume`` begins them again under the window just opened. ``blocking``: the held ones."""

    def __init__(self, recording: Callable[[], bool] = lambda: True) -> None:
        self.blocking = 0
        self._open: list[Any] = []  # record_function objects
        self._recording = recording
        self._saved: tuple[Any, Any] | None = None

    def install(self) -> None:
        from torch.autograd import profiler as autograd_profiler

        cls = autograd_profiler.record_function
        enter, exit_ = cls.__enter__, cls.__exit__
        ranges = self
        main = threading.main_thread()

        def tracked_enter(rf: Any) -> Any:
            out = enter(rf)  # type: ignore[no-untyped-call]
            if threading.current_thread() is main:
                rf._kernelscope_range = (LIVE if ranges._recording() else INERT, sys._getframe(1))
                ranges._open.append(rf)
            return out

        def tracked_exit(rf: Any, *exc: Any) -> Any:
            state = rf.__dict__.pop("_kernelscope_range", None)
            if state is not None:
                ranges._closed(rf, state[0])
            return exit_(rf, *exc)

        self._saved = (enter, exit_)
        cls.__enter__ = tracked_enter  # type: ignore[method-assign]
        cls.__exit__ = tracked_exit  # type: ignore[method-assign]

    def _closed(self, rf: Any, state: str) -> None:
        for i in range(len(self._open) - 1, -1, -1):
            if self._open[i] is rf:
                del self._open[i]
                break
        if state == HELD:
            self.blocking -= 1

    def suspend(self) -> tuple[str, ...]:
        """A window is about to stop: end the RecordFunction of every range begun under it, innermost first,
        so that none outlives its window. Returns their names."""
        if not self._open:
            return ()
        import torch

        ended = []
        here = threading.current_thread() is threading.main_thread()
        for rf in reversed(self._open):
            state, frame = rf._kernelscope_range
            if state != LIVE:
                continue
            if not here or not rf.run_callbacks_on_exit:
                # (stopped from another thread, or ``_call_end_callbacks_on_future``: its end is the future's)
                rf._kernelscope_range = (HELD, frame)
                self.blocking += 1
                continue
            with torch._C.DisableTorchFunctionSubclass():
                torch.ops.profiler._record_function_exit._RecordFunction(rf.record)
            rf._kernelscope_range = (SUSPENDED, frame)
            ended.append(rf.name)
        return tuple(ended)

    def resume(self) -> tuple[tuple[FrameType, str, bool], ...]:
        """A window has just opened: begin every open range again under it, outermost first. Returns, per
        range, the frame that entered it, its name and whether it ran on from the last window."""
        if not self._open or threading.current_thread() is not threading.main_thread():
            return ()
        import torch

        out = []
        for rf in self._open:
            state, frame = rf._kernelscope_range
            if state not in (SUSPENDED, INERT):
                continue
            rf.record = torch.ops.profiler._record_function_enter_new(rf.name, rf.args)
            rf._kernelscope_range = (LIVE, frame)
            out.append((frame, rf.name, state == SUSPENDED))
        return tuple(out)

    def remove(self) -> None:
        if self._saved is None:
            return
        from torch.autograd import profiler as autograd_profiler

        cls = autograd_profiler.record_function
        cls.__enter__, cls.__exit__ = self._saved  # type: ignore[method-assign]
        self._saved = None
        for rf in self._open:
            rf.__dict__.pop("_kernelscope_range", None)
        self._open.clear()
        self.blocking = 0


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
    return file is not None and not file.endswith(allow) and not any(d in file for d in _RF_FREE_DIRS)


def in_backward() -> bool:
    """Is this thread running autograd's engine (see the module's docstring)?"""
    import torch

    return bool(torch._C._current_graph_task_id() != -1)


class StackSafety:
    """Where a window may open or turn over (see the module's docstring). Main thread only."""

    def __init__(self) -> None:
        self.ranges = Ranges(self._recording)
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
        if threading.current_thread() is not threading.main_thread() or self.ranges.blocking > 0:
            return False
        return not self._holders(self._frames())

    def can_open(self) -> bool:
        """No window is open: may one open here?"""
        if threading.current_thread() is not threading.main_thread() or self.ranges.blocking > 0:
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
