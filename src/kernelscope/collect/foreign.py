"""The program's own torch.profiler, run inside a kernelscope session.

torch allows one profiler per thread: a program that starts ``torch.profiler.profile`` (or
``torch.autograd.profiler.profile``) while a window is open would fail with "Profiler is already enabled
on this thread". So the session steps aside: its window stops just before the program's profiler starts
(``_prepare_trace``), the program's profiler records, and when the program stops it (``__exit__``) the
session folds what it recorded (its ``kineto_results``, which the program keeps and may read afterwards)
and records again from the next point where that is safe. The program's ``prof.step()`` calls
(``ProfilerStep#N``) are step boundaries. Thin wrappers on the class, removed with the session.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class ForeignProfiler:
    def __init__(
        self,
        own: Callable[[Any], bool],
        starting: Callable[[], None],
        stopped: Callable[[Any], None],
        step: Callable[[], None],
    ) -> None:
        self._own = own  # is this profiler object the session's own window?
        self._starting = starting
        self._stopped = stopped
        self._step = step
        self.active = 0  # the program's profilers running now
        self.seen = 0
        self._saved: list[tuple[Any, str, Any]] = []

    def install(self) -> None:
        from torch.autograd.profiler import profile as autograd_profile
        from torch.profiler import profile as torch_profile

        prepare: Any = autograd_profile._prepare_trace
        exit_: Any = autograd_profile.__exit__
        step: Any = torch_profile.step
        hooks = self

        def _prepare_trace(prof: Any) -> Any:
            if not hooks._own(prof):
                hooks.active += 1
                hooks.seen += 1
                prof._kernelscope_foreign = True
                hooks._starting()
            return prepare(prof)

        def __exit__(prof: Any, *exc: Any) -> Any:
            out = exit_(prof, *exc)
            if getattr(prof, "_kernelscope_foreign", False):
                prof._kernelscope_foreign = False
                hooks.active -= 1
                hooks._stopped(prof)
            return out

        def profiler_step(prof: Any, *args: Any, **kwargs: Any) -> Any:
            out = step(prof, *args, **kwargs)
            hooks._step()
            return out

        self._saved = [
            (autograd_profile, "_prepare_trace", prepare),
            (autograd_profile, "__exit__", exit_),
            (torch_profile, "step", step),
        ]
        autograd_profile._prepare_trace = _prepare_trace  # type: ignore[method-assign]
        autograd_profile.__exit__ = __exit__  # type: ignore[method-assign]
        torch_profile.step = profiler_step  # type: ignore[method-assign,assignment]

    def remove(self) -> None:
        for cls, name, original in self._saved:
            setattr(cls, name, original)
        self._saved = []
