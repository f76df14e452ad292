"""Clock marks: the recording thread runs a known sequence of distinctly named Python functions at known
instants, so that py-spy's samples of them bound its clock against ours (align.py).

Phase k runs ``_kernelscope_clock_mark_k`` from ``starts[k]`` to ``starts[k + 1]`` (monotonic ns). The first
sample py-spy took in phase k (the start of that phase's segment: chrome.py) was taken in that span, so
py-spy's zero lies in ``[starts[k] - ts, starts[k + 1] - ts]`` (plus the few µs–ms py-spy takes to stamp a
sample after taking it); the bounds of all phases intersect.
"""

from __future__ import annotations

import time
import types
from collections.abc import Callable

PHASES = 16
PHASE_NS = 30_000_000
PREFIX = "_kernelscope_clock_mark_"


def _spin(until: int) -> None:
    while time.monotonic_ns() < until:
        pass


def _marks() -> list[Callable[[int], None]]:
    out: list[Callable[[int], None]] = []
    for k in range(PHASES):
        code = _spin.__code__.replace(co_name=f"{PREFIX}{k}", co_qualname=f"{PREFIX}{k}")
        out.append(types.FunctionType(code, _spin.__globals__, f"{PREFIX}{k}"))
    return out


def run_marks(phase_ns: int = PHASE_NS) -> list[int]:
    """Run the phases; returns their start instants and the end of the last (PHASES + 1 values)."""
    starts: list[int] = []
    for mark in _marks():
        t = time.monotonic_ns()
        starts.append(t)
        mark(t + phase_ns)
    starts.append(time.monotonic_ns())
    return starts


def phase_of(name: str) -> int | None:
    if name.startswith(PREFIX):
        tail = name[len(PREFIX) :]
        if tail.isdigit():
            return int(tail)
    return None


def bounds(starts: list[int], first_ts_us: dict[int, int], stamp_ns: int) -> tuple[int, int] | None:
    """py-spy's zero on the monotonic clock lies in the returned [low, high] (``first_ts_us``: phase -> the
    py-spy time of its first sample; ``stamp_ns``: the most py-spy may take to stamp a sample)."""
    low, high = None, None
    for k, ts in first_ts_us.items():
        if not 0 <= k < len(starts) - 1:
            continue
        lo, hi = starts[k] - ts * 1000, starts[k + 1] - ts * 1000 + stamp_ns
        low = lo if low is None else max(low, lo)
        high = hi if high is None else min(high, hi)
    if low is None or high is None or low > high:
        return None
    return low, high
