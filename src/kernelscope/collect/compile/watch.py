"""When torch.compile starts and ends compiling (Dynamo's compilation callbacks), added and removed
without touching anyone else's.

The callbacks take whatever Dynamo passes: torch >= 2.6 calls them with a ``CallbackArgs``, torch 2.5 with
nothing (a callback that required the argument raised ``TypeError`` into the program's compile there).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any


class CompileWatch:
    def __init__(self, started: Callable[[], None], ended: Callable[[], None]) -> None:
        self._started = started
        self._ended = ended
        self._installed: tuple[Any, Any] | None = None

    def install(self) -> None:
        try:
            from torch._dynamo.callback import callback_handler
        except ImportError:  # pragma: no cover - older torch
            return

        def started(*_args: Any) -> None:
            self._started()

        def ended(*_args: Any) -> None:
            self._ended()

        callback_handler.register_start_callback(started)
        callback_handler.register_end_callback(ended)
        self._installed = (started, ended)

    def remove(self) -> None:
        if self._installed is None:
            return
        from torch._dynamo.callback import callback_handler

        started, ended = self._installed
        for remove, cb in (
            (callback_handler.remove_start_callback, started),
            (callback_handler.remove_end_callback, ended),
        ):
            with contextlib.suppress(ValueError):
                remove(cb)
        self._installed = None
