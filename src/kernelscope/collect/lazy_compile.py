"""Start torch.compile's provenance capture only when the program uses torch.compile.

The capture needs Inductor's ``compile_fx`` (~1.2 s to import on this 2-core VM, on top of the
``torch._inductor`` package that torch.profiler's own start imports), paid even by programs that never
compile. So a session hooks it in at ``torch.compile(...)`` (a thin wrapper on the public entry point,
removed afterwards), which comes before the first compilation: Dynamo compiles a function at its first
call, not when it is wrapped. Programs that call ``torch._dynamo.optimize`` directly get it when Dynamo
starts its first compilation (the session's compile watch); when ``compile_fx`` is already imported as
the session starts, at once.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any


class LazyCompile:
    def __init__(self, ready: Callable[[], None]) -> None:
        self._ready = ready
        self._original: Any = None
        self._wrapper: Any = None
        self.done = False

    def install(self) -> None:
        if "torch._inductor.compile_fx" in sys.modules:  # already imported: nothing to save
            self.fire()
            return
        import torch

        original = torch.compile

        @functools.wraps(original)
        def compile(*args: Any, **kwargs: Any) -> Any:
            self.fire()
            return original(*args, **kwargs)

        self._original, self._wrapper = original, compile
        torch.compile = compile  # type: ignore[assignment]

    def fire(self) -> None:
        if self.done:
            return
        self.done = True
        self.remove()
        self._ready()

    def remove(self) -> None:
        if self._wrapper is None:
            return
        import torch

        if torch.compile is self._wrapper:  # never undo a rebinding the program made after ours
            torch.compile = self._original
        self._original = self._wrapper = None


def preimport_inductor() -> None:
    """Import the ``torch._inductor`` package now: torch.profiler's start does (``hasattr(torch,
    "_inductor")``, ~1.3 s), and it should not happen inside the program's first op."""
    import importlib

    try:
        importlib.import_module("torch._inductor")
    except Exception:  # the profiler will meet the same problem and handle it its way
        return
