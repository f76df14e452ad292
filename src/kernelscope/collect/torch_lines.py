"""The issuing line of every op, operators included.

PyTorch's Python tracer records each Python-level call with the line it was called from, so an op
reached through a function or method call (``torch.relu(x)``, ``x.tanh()``, ``self.fc(x)``) is on
its line. Ops reached through operators (``x @ w``, ``a + b``, ``x[i]``, ``y += 1``) make no
Python-level call: the interpreter goes straight to the C slot. Two mechanisms close that gap:

- ``OperatorLines`` puts a thin Python wrapper on each of ``torch.Tensor``'s operator slots that is
  implemented in C. The wrapper is a Python call, so the tracer records it with the exact line of
  the expression; the op nests inside it, and the tree builder needs no rule of its own. Only
  operators pay (a Python frame and four tracer events each, Dynamo's ``is_compiling()`` check
  included); function and module calls are untouched. They are off while a library optimizer steps.
- ``LineMode``, a ``TorchFunctionMode``, sees every torch call from Python. It is kernelscope's hook
  on "the program is about to run an op" while waiting for the program's own first op (record
  from the first call) and for programs that call no module and no operator (folding as the run
  goes), and is removed once module calls or operators can take over.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import torch
from torch.compiler import is_compiling as _is_compiling
from torch.overrides import TorchFunctionMode

# Operator slots of torch.Tensor. Those already written in Python (``__rsub__``, ``__pow__``,
# ``__rmatmul__``, ...) are recorded by the tracer as they are and are left alone.
OPERATORS = (
    "__add__",
    "__radd__",
    "__iadd__",
    "__sub__",
    "__isub__",
    "__mul__",
    "__rmul__",
    "__imul__",
    "__truediv__",
    "__itruediv__",
    "__floordiv__",
    "__ifloordiv__",
    "__mod__",
    "__rmod__",
    "__imod__",
    "__matmul__",
    "__rmatmul__",
    "__pow__",
    "__ipow__",
    "__neg__",
    "__pos__",
    "__abs__",
    "__invert__",
    "__and__",
    "__rand__",
    "__iand__",
    "__or__",
    "__ror__",
    "__ior__",
    "__xor__",
    "__rxor__",
    "__ixor__",
    "__lshift__",
    "__rlshift__",
    "__ilshift__",
    "__rshift__",
    "__rrshift__",
    "__irshift__",
    "__getitem__",
    "__setitem__",
)
_C_SLOTS = ("method_descriptor", "wrapper_descriptor", "builtin_function_or_method")


class Counter:
    """Counts op-issuing calls; calls ``on_call`` every ``every`` of them (outside compiled code)."""

    def __init__(self, on_call: Callable[[], None] | None, every: int) -> None:
        self.calls = 0
        self.every = every
        self._next = every
        self._on_call = on_call

    def tick(self) -> None:
        self.calls += 1
        if self.calls >= self._next:
            self.tick_due()

    def tick_due(self) -> None:
        if self._on_call is not None:
            self._next = self.calls + self.every
            self._on_call()

    def rearm(self, every: int) -> None:
        self.every = every
        self._next = self.calls + every


class OperatorLines:
    """Python wrappers on torch.Tensor's C operator slots, installed for a session and removed after.

    While a library optimizer steps (``torch.optim``'s own ``step``, no closure) the slots are torch's own again:
    its per-parameter arithmetic (``step_t += 1``, ...) was 70% of the wrappers' calls in a nanoGPT or GPT-2 window,
    on library lines that no profile shows, and each call is four events that torch's stop pays for again."""

    def __init__(self, counter: Counter, on_pause: Callable[[], None] | None = None) -> None:
        self.counter = counter
        self._on_pause = on_pause  # (the session: a step that raises runs no post hook, the next module call resumes)
        self._saved: dict[str, Any] = {}  # name -> what torch.Tensor's own __dict__ held (None: inherited)
        self._wrappers: dict[str, Any] = {}  # (kept for the session: torch's tracer reads their code at its stop)
        self._library_steps: dict[type, bool] = {}  # optimizer class -> is its step library code?
        self._handles: list[Any] = []
        self.paused = 0  # library optimizer steps under way with the slots torch's own

    def install(self) -> None:
        cls = torch.Tensor
        for name in OPERATORS:
            original = getattr(cls, name, None)
            if original is None or type(original).__name__ not in _C_SLOTS:
                continue
            self._saved[name] = cls.__dict__.get(name)
            self._wrappers[name] = _wrap(name, original, self.counter)
        self._apply()
        from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

        self._handles = [
            register_optimizer_step_pre_hook(self._step_begins),
            register_optimizer_step_post_hook(self._step_ended),
        ]

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []
        self._restore()
        self.paused = 0
        self._saved.clear()
        self._wrappers.clear()

    def resume(self) -> None:
        """The wrappers back, whatever left them off (an optimizer step that raised: no post hook)."""
        if self.paused:
            self.paused = 0
            self._apply()

    # (both run twice a step, in a window: subscripts and ``in``, not ``.get()``, which the tracer records as a call)
    def _apply(self) -> None:
        """Each wrapper in, where torch's own slot is there (never over what the program put there since)."""
        cls = torch.Tensor
        held = cls.__dict__
        saved = self._saved
        for name, wrapper in self._wrappers.items():
            if (held[name] if name in held else None) is saved[name]:  # noqa: SIM401 (.get: a recorded call)
                setattr(cls, name, wrapper)

    def _restore(self) -> None:
        """torch's own slot back, where the wrapper is there."""
        cls = torch.Tensor
        held = cls.__dict__
        wrappers = self._wrappers
        for name, own in self._saved.items():
            if name not in held or name not in wrappers or held[name] is not wrappers[name]:
                continue
            if own is None:
                delattr(cls, name)
            else:
                setattr(cls, name, own)

    def _step_begins(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if _is_compiling():  # (first: Dynamo tracing a step reads nothing of ours)
            return
        if self.paused:  # (an optimizer stepping another)
            self.paused += 1
        elif len(args) <= 1 and not kwargs and self._library_step(type(optimizer)):
            # (``args`` is the step's own, the optimizer first; a closure runs the program's own forward and backward
            # inside the step: its lines count)
            self.paused = 1
            self._restore()
            if self._on_pause is not None:
                self._on_pause()

    def _step_ended(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if not _is_compiling() and self.paused:
            self.paused -= 1
            if not self.paused:
                self._apply()

    def _library_step(self, cls: type) -> bool:
        hit = self._library_steps.get(cls)
        if hit is None:
            from ..attribute.userframes import is_user_file

            step = getattr(cls, "step", None)
            code = getattr(inspect.unwrap(step), "__code__", None) if callable(step) else None
            hit = self._library_steps[cls] = code is not None and not is_user_file(code.co_filename)
        return hit


def _wrap(name: str, original: Any, counter: Counter) -> Any:
    def operator(*args: Any, **kwargs: Any) -> Any:
        if not _is_compiling():  # under torch.compile: a plain call, the graph the program gets anyway
            # (Counter.tick, inline: inside a window torch's Python tracer records every call made here)
            counter.calls += 1
            if counter.calls >= counter._next:
                counter.tick_due()
        return original(*args, **kwargs)

    operator.__name__ = operator.__qualname__ = name
    return operator


class LineMode(TorchFunctionMode):
    """Every torch call from Python ticks the counter (see the module's docstring)."""

    def __init__(self, counter: Counter) -> None:
        super().__init__()
        self.counter = counter

    def __torch_function__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        if kwargs is None:
            kwargs = {}
        if _is_compiling():
            # torch.compile traces through active modes: constant-folded to a plain call there, so
            # the compiled graph is the one the program gets without kernelscope
            return func(*args, **kwargs)
        self.counter.tick()
        return func(*args, **kwargs)
