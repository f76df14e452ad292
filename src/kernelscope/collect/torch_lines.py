"""The issuing line of every op, operators included.

PyTorch's Python tracer records each Python-level call with the line it was called from, so an op
reached through a function or method call (``torch.relu(x)``, ``x.tanh()``, ``self.fc(x)``) is on
its line. Ops reached through operators (``x @ w``, ``a + b``, ``x[i]``, ``y += 1``) make no
Python-level call: the interpreter goes straight to the C slot. Two mechanisms close that gap:

- ``OperatorLines`` puts a thin Python wrapper on each of ``torch.Tensor``'s operator slots that is
  implemented in C. The wrapper is a Python call, so the tracer records it with the exact line of
  the expression; the op nests inside it, and the tree builder needs no rule of its own. Only
  operators pay (a Python frame and two tracer events each); function and module calls are untouched.
- ``LineMode``, a ``TorchFunctionMode``, sees every torch call from Python. It is kernelscope's hook
  on "the program is about to run an op" while waiting for the program's own first op (record
  from the first call) and for programs that call no module and no operator (folding as the run
  goes), and is removed once module calls or operators can take over.
"""

from __future__ import annotations

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
    """Python wrappers on torch.Tensor's C operator slots, installed for a session and removed after."""

    def __init__(self, counter: Counter) -> None:
        self.counter = counter
        self._saved: dict[str, Any] = {}  # name -> what torch.Tensor's own __dict__ held (None: inherited)

    def install(self) -> None:
        cls = torch.Tensor
        for name in OPERATORS:
            original = getattr(cls, name, None)
            if original is None or type(original).__name__ not in _C_SLOTS:
                continue
            self._saved[name] = cls.__dict__.get(name)
            setattr(cls, name, _wrap(name, original, self.counter))

    def remove(self) -> None:
        cls = torch.Tensor
        for name, own in self._saved.items():
            if own is None:
                delattr(cls, name)
            else:
                setattr(cls, name, own)
        self._saved.clear()


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
