"""Proton-style launch metrics: each Triton launch becomes a kernel node under the user line that issued it.

Compiled mode (a GPU): kernelscope *adds* its callbacks to ``triton.knobs.runtime.launch_enter_hook``
(a HookChain, so a user's or Proton's hooks keep running) and removes them afterwards. Triton hands the
hook a lazy dict: the compiled kernel's ``name`` merged with what the kernel's ``launch_metadata``
callback returns — Proton's convention: ``name`` (the node's name), ``flops``, ``flops8/16/32/64``,
``bytes`` and any custom numeric metrics.

Interpreter mode (``TRITON_INTERPRET=1``): Triton calls neither the hooks nor ``launch_metadata``, so
kernelscope wraps ``InterpretedFunction.run`` and calls the callback itself with the same arguments a
compiled launch would give it: the resolved grid, a metadata record and the bound arguments by name.
There the node also gets ``time_ns``: the interpreter's time for the launch (the kernel ran on the CPU).
"""

from __future__ import annotations

import inspect
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from numbers import Number
from types import SimpleNamespace
from typing import Any

from ...attribute.userframes import display_path, is_user_file
from ...errors import BadInputError
from ...model import Frame, ProfileBuilder
from .compat import launch_hooks
from .helpers import InterpretedHelpers

# what Triton's runtime puts into every launch's metadata: never metrics
_RESERVED = frozenset({"name", "function", "stream"})


@dataclass(frozen=True)
class LaunchMetrics:
    name: str  # as Proton names the launch: launch_metadata's "name", else the compiled kernel's name
    stack: tuple[Frame, ...]  # the issuing user frames, outermost first
    metrics: dict[str, float]
    interpreted: bool = False  # ran on the interpreter (time_ns is its CPU wall time)


def metrics_of(data: dict[str, Any]) -> dict[str, float]:
    """The numeric metrics of a launch's metadata (Proton's rule: numbers, and one-element CPU tensors)."""
    out: dict[str, float] = {"count": 1.0}
    for key, value in data.items():
        if key in _RESERVED or value is None or isinstance(value, bool):
            continue
        if isinstance(value, Number):
            out[key] = float(value)  # type: ignore[arg-type]
        elif _is_cpu_scalar_tensor(value):
            out[key] = float(value.item())
    return out


def _is_cpu_scalar_tensor(value: Any) -> bool:
    # a device tensor would need a synchronising .item(); Proton reads those on the device, we skip them
    device = getattr(getattr(value, "device", None), "type", "")
    return hasattr(value, "data_ptr") and device == "cpu" and value.numel() == 1


def user_stack(start: int = 2) -> tuple[Frame, ...]:
    """The user frames (DESIGN.md's user-code rule) on the current stack, outermost first."""
    frames: list[Frame] = []
    f = sys._getframe(start)
    while f is not None:
        code = f.f_code
        if is_user_file(code.co_filename):
            frames.append(Frame.python(display_path(code.co_filename), f.f_lineno, code.co_name))
        f = f.f_back  # type: ignore[assignment]
    frames.reverse()
    return tuple(frames)


class LaunchRecorder:
    """Records a ``LaunchMetrics`` per Triton launch while installed (both modes at once)."""

    def __init__(self) -> None:
        self.records: list[LaunchMetrics] = []
        self.warnings: list[str] = []
        self._undo: list[Callable[[], None]] = []
        self._helpers = InterpretedHelpers()

    def install(self) -> None:
        enter, _exit = launch_hooks()
        enter.add(self._on_enter)
        self._undo.append(lambda: enter.remove(self._on_enter))
        try:
            from triton.runtime.interpreter import InterpretedFunction
        except Exception:  # no interpreter in this Triton: compiled launches only
            return
        original = InterpretedFunction.__dict__["run"]
        InterpretedFunction.run = self._wrap_interpreted(original)
        self._undo.append(lambda: setattr(InterpretedFunction, "run", original))
        self._helpers.install()
        self._undo.append(self._helpers.remove)

    def remove(self) -> None:
        while self._undo:
            self._undo.pop()()

    @staticmethod
    def install_if_available() -> LaunchRecorder | None:
        """An installed recorder when a Triton kernelscope can drive is installed (imports it, a
        fraction of a second: benchmarks/README.md, "Costs the code's comments rely on"), else None.

        For a profiling session: ``rec = LaunchRecorder.install_if_available()`` at start, then
        ``rec.remove(); rec.graft(builder)`` at the end.
        """
        import importlib.util

        if importlib.util.find_spec("triton") is None:
            return None
        rec = LaunchRecorder()
        try:
            rec.install()
        except BadInputError:
            rec.remove()
            return None
        return rec

    def add_measured(self, totals: list[tuple[int, int]]) -> bool:
        """Give the interpreted launches, in order, the inspector's measured ``bytes`` and ``flops``
        (``totals[i]`` for the i-th interpreted launch); metrics the kernel's ``launch_metadata`` declared
        are kept. False (nothing changed) when the counts of launches differ."""
        interpreted = [i for i, r in enumerate(self.records) if r.interpreted]
        if len(interpreted) != len(totals):
            return False
        for i, (nbytes, flops) in zip(interpreted, totals, strict=True):
            r = self.records[i]
            measured = {"bytes": float(nbytes), **({"flops": float(flops)} if flops else {})}
            self.records[i] = replace(r, metrics={**measured, **r.metrics})
        return True

    def graft(self, builder: ProfileBuilder, start: int = 0) -> None:
        """Add every launch as a kernel node under its user frames (below node ``start``)."""
        for rec in self.records:
            node = builder.child(builder.path(rec.stack, start), Frame.kernel(rec.name))
            builder.add_many(node, rec.metrics)

    # --- compiled mode ------------------------------------------------------------------
    def _on_enter(self, metadata: Any) -> None:
        try:
            data = dict(metadata.get())
        except Exception as exc:  # the user's launch_metadata failed; Triton itself will report it
            self._warn(f"launch_metadata failed ({type(exc).__name__}: {exc})")
            data = dict(getattr(metadata, "data", {}))
        self.records.append(LaunchMetrics(str(data.get("name", "?")), user_stack(), metrics_of(data)))

    # --- interpreter mode ---------------------------------------------------------------
    def _wrap_interpreted(self, original: Callable[..., Any]) -> Callable[..., Any]:
        recorder = self

        def run(fn: Any, *args: Any, grid: Any, warmup: Any, **kwargs: Any) -> Any:
            if warmup:
                return original(fn, *args, grid=grid, warmup=warmup, **kwargs)
            stack = user_stack()
            data = recorder._interpreted_metadata(fn, args, kwargs, grid)
            t0 = time.perf_counter_ns()
            try:
                with recorder._helpers.active():
                    return original(fn, *args, grid=grid, warmup=warmup, **kwargs)
            finally:
                metrics = metrics_of(data)
                metrics["time_ns"] = float(time.perf_counter_ns() - t0)
                recorder.records.append(LaunchMetrics(str(data.get("name", fn.__name__)), stack, metrics, True))

        return run

    def _interpreted_metadata(
        self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], grid: Any
    ) -> dict[str, Any]:
        name = fn.__name__
        callback = fn.kwargs.get("launch_metadata")
        if callback is None:
            return {"name": name}
        try:
            params = inspect.signature(fn.fn).parameters
            bound = inspect.signature(fn.fn).bind(*args, **{k: v for k, v in kwargs.items() if k in params})
            bound.apply_defaults()
            arg_dict = dict(bound.arguments)
            resolved = tuple(grid(arg_dict) if callable(grid) else grid)
            meta = SimpleNamespace(
                name=name,
                num_warps=kwargs.get("num_warps", 4),
                num_stages=kwargs.get("num_stages", 3),
                num_ctas=kwargs.get("num_ctas", 1),
                shared=0,
            )
            return {"name": name, **dict(callback(resolved, meta, arg_dict))}
        except Exception as exc:  # a broken callback must not stop the user's program
            self._warn(f"{name}: launch_metadata failed ({type(exc).__name__}: {exc})")
            return {"name": name}

    def _warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)
