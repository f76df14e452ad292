"""The issuing line of every op, operators included.

PyTorch's Python tracer records each Python-level call with the line it was called from. Ops
reached through operators (``x @ w``, ``a + b``, ``x[i]``, ``y += 1``) make no Python-level call,
so the tracer cannot say which line issued them. A ``TorchFunctionMode`` is entered by every
torch function called from Python, operators included; its ``__torch_function__`` is a Python
call, so the tracer records it with the exact line of its caller, and the op nests inside it.
The tree builder then needs no rule of its own: a Python call whose caller is user code gives
that line.

The mode is also kernelscope's cheapest hook on "the program is about to run an op": it counts
calls (the event budget for folding as the run goes) and calls ``on_call`` every ``every`` calls.
Cost: about 1.5–3 µs per torch call from Python (benchmarks/README.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch.compiler import is_compiling as _is_compiling
from torch.overrides import TorchFunctionMode


class LineMode(TorchFunctionMode):
    def __init__(self, on_call: Callable[[], None] | None = None, every: int = 4096) -> None:
        super().__init__()
        self.calls = 0
        self.every = every
        self._next = every
        self._on_call = on_call

    def __torch_function__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        if kwargs is None:
            kwargs = {}
        if _is_compiling():
            # torch.compile traces through active modes: constant-folded to a plain call there, so
            # the compiled graph is the one the program gets without kernelscope
            return func(*args, **kwargs)
        self.calls += 1
        if self.calls >= self._next and self._on_call is not None:
            self._next = self.calls + self.every
            self._on_call()
        return func(*args, **kwargs)
