"""Run Triton's compiled-mode ``@triton.jit`` helpers on the interpreter while a kernel is interpreted.

``@triton.jit`` decides between compiled and interpreted mode when a function is defined. When ``triton``
was imported before ``TRITON_INTERPRET=1`` was set (torch imports it; so does a test run or
``kernelscope run``), Triton's own helpers (``tl.zeros``, reduction combine functions, ...) are compiled-mode
functions, and an interpreted kernel that calls them fails ("Cannot call @triton.jit'd outside of the scope
of a kernel"). While ``active()`` is entered, such calls run through the interpreter instead.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any


class InterpretedHelpers:
    def __init__(self) -> None:
        self._depth = 0
        self._cache: dict[Any, Any] = {}
        self._restore: Any = None

    def install(self) -> None:
        from triton.runtime.interpreter import InterpretedFunction
        from triton.runtime.jit import JITFunction

        original = JITFunction.__dict__["__call__"]
        cache, helpers = self._cache, self

        def call(fn: Any, *args: Any, **kwargs: Any) -> Any:
            if helpers._depth == 0:
                return original(fn, *args, **kwargs)
            runner = cache.get(fn.fn)
            if runner is None:
                runner = cache[fn.fn] = InterpretedFunction(fn.fn)
            return runner(*args, **kwargs)

        JITFunction.__call__ = call
        self._restore = lambda: setattr(JITFunction, "__call__", original)

    def remove(self) -> None:
        if self._restore is not None:
            self._restore()
            self._restore = None

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
