"""Start torch.compile's capture only when the program uses torch.compile.

Importing Dynamo and Inductor for the compile watch and provenance capture costs ~2 s of start-up on
this 2-core VM, a tenth of a short run, paid even by programs that never compile. So a session hooks
them in when Dynamo is about to be used: at ``torch.compile(...)`` (a thin wrapper on the public entry
point, removed afterwards) or, for programs that import ``torch._dynamo`` themselves, at the next safe
point after the import. Both come before the first compilation: Dynamo compiles a function at its
first call, not when it is wrapped.
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
        if "torch._dynamo" in sys.modules:  # already imported (by the program or a library): now
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

    def poll(self) -> None:
        """At a safe point: Dynamo imported without ``torch.compile`` (``torch._dynamo.optimize``, ...)."""
        if not self.done and "torch._dynamo" in sys.modules:
            self.fire()

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
