"""Device→host reads of JAX arrays per user line, at run time (live JAX runs only).

Every read of a ``jax.Array``'s value on the host — ``np.asarray(x)``, ``float(x)``, ``x.item()``,
``x.tolist()``, ``jax.device_get(x)``, printing — goes through the array's ``_value`` property (JAX marks it
with the profiler annotation ``np.asarray(jax.Array)``). The read waits until the computation producing the
array has finished, then copies it to the host: inside a training loop it stops the host from running
ahead of the device. An XPlane records these reads as host-thread events without a source line, so while
a live run records, ``_value`` is wrapped to note the innermost user line of each read and the time the
read took. It forwards to JAX's own property and changes nothing it returns. When the installed JAX has no
such property (a private name), nothing is wrapped and ``note`` says so.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from ..attribute.userframes import display_path, is_user_file


class HostReads:
    """Counts reads and their time per (file, line, function) of the innermost user frame."""

    def __init__(self) -> None:
        self.by_line: dict[tuple[str, int, str], list[int]] = {}  # -> [reads, ns]
        self.note = ""  # why nothing was recorded, when that is so
        self._undo: Callable[[], None] | None = None

    def install(self, jax: Any) -> None:
        try:
            from jax._src.array import ArrayImpl
        except ImportError:
            self.note = f"host reads of arrays not recorded: jax {jax.__version__} has no jax._src.array.ArrayImpl"
            return
        self.wrap(ArrayImpl, f"jax {jax.__version__}")

    def wrap(self, array_type: type, what: str) -> None:
        """Wrap ``array_type._value`` (a property) until ``remove()``."""
        prop = array_type.__dict__.get("_value")
        if not isinstance(prop, property) or prop.fget is None:
            self.note = f"host reads of arrays not recorded: {what} has no ArrayImpl._value property"
            return
        fget = prop.fget
        clock = time.perf_counter_ns
        reads = self

        def _value(array: Any) -> Any:
            began = clock()
            try:
                return fget(array)
            finally:
                reads.record(clock() - began)

        try:
            setattr(array_type, "_value", property(_value, doc=prop.__doc__))  # noqa: B010
        except (TypeError, AttributeError) as exc:  # a type that takes no new attributes
            self.note = f"host reads of arrays not recorded: cannot wrap ArrayImpl._value ({exc})"
            return
        self._undo = lambda: setattr(array_type, "_value", prop)

    def remove(self) -> None:
        if self._undo is not None:
            self._undo()
            self._undo = None

    def record(self, ns: int) -> None:
        f = sys._getframe(1)  # the wrapper (kernelscope's), then JAX's callers, then the program
        while f is not None and not is_user_file(f.f_code.co_filename):  # (cached: attribute/userframes.py)
            f = f.f_back  # type: ignore[assignment]
        if f is None:
            return  # a read by library code outside any user frame
        code = f.f_code
        key = (code.co_filename, f.f_lineno, getattr(code, "co_qualname", code.co_name))
        acc = self.by_line.get(key)
        if acc is None:
            acc = self.by_line[key] = [0, 0]
        acc[0] += 1
        acc[1] += ns

    def rows(self) -> list[dict[str, Any]]:
        """``metadata["host_reads"]``: one row per line, file paths as views show them."""
        return [
            {"file": display_path(file), "line": line, "function": fn, "reads": n, "ns": ns}
            for (file, line, fn), (n, ns) in sorted(self.by_line.items())
        ]


__all__ = ["HostReads"]
