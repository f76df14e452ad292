"""Start torch.compile's provenance capture only when the program uses torch.compile.

The capture needs Inductor's ``compile_fx`` (seconds to import: benchmarks/README.md, "Costs the code's comments rely on"; on top of the
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


class CompileEntry:
    """Calls ``entered`` just before Dynamo compiles a frame and ``left`` just after, before the compiled
    code first runs: a thin wrapper on ``torch._dynamo.convert_frame._compile`` (looked up by name at each
    compilation), removed afterwards. What Dynamo compiles is untouched."""

    def __init__(self, entered: Callable[[], None], left: Callable[[], None]) -> None:
        self._entered = entered
        self._left = left
        self._original: Any = None
        self._wrapper: Any = None

    def install(self) -> None:
        if self._wrapper is not None:
            return
        try:
            from torch._dynamo import convert_frame
        except ImportError:  # pragma: no cover - a torch without Dynamo
            return
        original = convert_frame._compile
        entered, left = self._entered, self._left

        @functools.wraps(original)
        def _compile(*args: Any, **kwargs: Any) -> Any:
            skip = kwargs.get("skip")
            if isinstance(skip, int):
                kwargs["skip"] = skip + 1  # Dynamo counts the frames between it and the user's frame
            entered()
            try:
                return original(*args, **kwargs)
            finally:
                left()

        self._original, self._wrapper = original, _compile
        convert_frame._compile = _compile

    def remove(self) -> None:
        if self._wrapper is None:
            return
        from torch._dynamo import convert_frame

        if convert_frame._compile is self._wrapper:
            convert_frame._compile = self._original
        self._original = self._wrapper = None
