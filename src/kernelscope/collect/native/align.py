"""Put py-spy's samples on torch's clock.

torch stamps its events with the wall clock (``CLOCK_REALTIME``, ns); py-spy stamps each sample in µs since
an instant of its own on the monotonic clock, shortly before it printed that it samples. So
``real = ts * 1000 + offset``, and ``offset`` is known within a bound from two facts: the first sample
came after py-spy said it is ready (read here at ``ready`` on the monotonic clock, converted to the wall
clock by ``time.time_ns() - time.monotonic_ns()`` measured once) and a few sampling intervals after it.
Within that bound the offset is the one under which the most samples taken inside an op name that op
(their native stack holds ``at::_ops::<op>::call``, torch's dispatcher entry for it) or, for samples in a
kernel library (whose stacks py-spy often cannot unwind past the kernel), fall inside some op (``ANY_OP``):
one number for the whole run, fitted like any clock offset between two recorders (``Alignment.matched``
says how many agree).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

EARLY_NS = 50_000_000  # how long before py-spy's ready line its first sample may be stamped (pipe, scheduling)
COARSE_NS = 200_000
ANY_OP = -3  # a sample's name id meaning: inside any op
FINE_NS = 10_000


@dataclass(frozen=True)
class Alignment:
    offset_ns: int
    matched: int  # samples inside an op that names it, at the chosen offset
    informative: int  # samples whose native stack names an op
    bound_ns: int  # the width of the window the offset was searched in


def op_names_of(symbols: Sequence[str]) -> tuple[str, ...]:
    """The torch op names (``aten::mm``) that a native stack's dispatcher entries name (``at::_ops::mm::call``,
    ``at::_ops::add_Tensor::call`` -> aten::add_Tensor, aten::add), innermost first."""
    out: list[str] = []
    for sym in reversed(symbols):
        if not sym.startswith("at::_ops::"):
            continue
        name = sym[len("at::_ops::") :].split("::", 1)[0]
        parts = name.split("_")
        for i in range(len(parts), 0, -1):
            cand = "aten::" + "_".join(parts[:i])
            if cand.endswith("aten::"):
                continue
            if cand not in out:
                out.append(cand)
        if name.endswith("_") and "aten::" + name not in out:  # an in-place op: aten::relu_
            out.append("aten::" + name)
    return tuple(out)


def fit_offset(
    sample_us: npt.NDArray[np.int64],
    sample_names: Sequence[tuple[int, ...]],
    seg_start: npt.NDArray[np.int64],
    seg_end: npt.NDArray[np.int64],
    seg_name: npt.NDArray[np.int64],
    low_ns: int,
    high_ns: int,
) -> Alignment:
    """The offset in [low_ns, high_ns] that puts the most samples inside an op of a name they carry.
    ``sample_us``: the informative samples' py-spy times; ``sample_names``: their op-name ids (up to 4 used);
    ``seg_*``: the innermost op at each instant (non-overlapping, sorted), as name ids."""
    m = len(sample_us)
    middle = (low_ns + high_ns) // 2
    if m == 0 or len(seg_start) == 0:
        return Alignment(middle, 0, m, high_ns - low_ns)
    names = np.full((m, 4), -2, dtype=np.int64)
    for i, ids in enumerate(sample_names):
        for j, v in enumerate(ids[:4]):
            names[i, j] = v
    t = sample_us.astype(np.int64) * 1000
    any_op = (names == ANY_OP).any(axis=1)

    def score(offsets: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        out = np.zeros(len(offsets), dtype=np.int64)
        for k0 in range(0, len(offsets), 512):
            o = offsets[k0 : k0 + 512]
            q = t[None, :] + o[:, None]
            idx = np.searchsorted(seg_start, q, side="right") - 1
            ok = idx >= 0
            idx = np.where(ok, idx, 0)
            inside = ok & (q < seg_end[idx])
            nm = np.where(inside, seg_name[idx], -1)
            hit = (nm[:, :, None] == names[None, :, :]).any(axis=2) | ((nm >= 0) & any_op[None, :])
            out[k0 : k0 + 512] = hit.sum(axis=1)
        return out

    coarse = np.arange(low_ns, high_ns + 1, COARSE_NS, dtype=np.int64)
    s = score(coarse)
    best = int(coarse[int(np.argmax(s))])
    fine = np.arange(max(low_ns, best - 2 * COARSE_NS), min(high_ns, best + 2 * COARSE_NS) + 1, FINE_NS, dtype=np.int64)
    f = score(fine)
    top = int(f.max())
    at = np.flatnonzero(f == top)
    # the middle of the longest run of best offsets
    runs = np.split(at, np.flatnonzero(np.diff(at) != 1) + 1)
    run = max(runs, key=len)
    return Alignment(int(fine[int(run[len(run) // 2])]), top, m, high_ns - low_ns)
