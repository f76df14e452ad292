"""Place an Inductor kernel under the user lines and modules of the ops it fused (DESIGN.md).

Pure: input is the kernel frame, its origins (:class:`FusedOrigin`, which ``collect.compile`` reads from FX node metadata) and the
kernel's measured metrics; output is the paths and metrics to add, relative to the user context
the compiled region was called from.

- All origins on one line and module: one path ``stack…, module, [backward], kernel``.
- Several lines: the kernel goes under the longest common prefix of the origins' contexts, with one
  ``part(op, file, line, module)`` child per distinct original op/line/module. Each part gets an
  *estimated* share of the kernel's measured metrics (by its bytes and FLOPs); shares always sum
  exactly to the measured values (the last part takes the rounding). ``count`` stays on the kernel:
  a part is not a call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from ..model import Frame

T = TypeVar("T")


@dataclass(frozen=True)
class FusedOrigin:
    """One original op (one or more post-grad FX nodes) inside an Inductor kernel."""

    op: str  # original aten op, "aten::mm"
    stack: tuple[Frame, ...]  # user python frames, outermost → innermost
    module: Frame | None  # innermost module frame (attribute path, class)
    backward: bool  # node of a backward graph (stack points at the forward line)
    flops: float  # from node shapes (matmul/conv/...), 0 otherwise
    bytes: float  # tensor bytes read + written by the node(s), from meta shapes/dtypes
    nodes: tuple[str, ...] = ()  # post-grad node names (debugging)


# FLOPs that cost as much time as one byte moved: a CPU's compute/bandwidth balance, roughly.
# Only the *ratio* between parts of one kernel matters.
FLOPS_PER_BYTE = 8.0
# Metrics never split across parts.
KERNEL_ONLY = frozenset({"count"})


class _Origin(Protocol):
    @property
    def op(self) -> str: ...
    @property
    def stack(self) -> tuple[Frame, ...]: ...
    @property
    def module(self) -> Frame | None: ...
    @property
    def backward(self) -> bool: ...
    @property
    def flops(self) -> float: ...
    @property
    def bytes(self) -> float: ...


Path = list[Frame]


def context_of(origin: _Origin) -> tuple[Frame, ...]:
    """Where an origin's op ran: its user frames, then its module."""
    return (*origin.stack, origin.module) if origin.module is not None else tuple(origin.stack)


def common_prefix(contexts: Sequence[tuple[T, ...]]) -> tuple[T, ...]:
    """The longest path all ``contexts`` start with (frames of any comparable kind)."""
    if not contexts:
        return ()
    first = contexts[0]
    n = len(first)
    for ctx in contexts[1:]:
        n = min(n, len(ctx))
        for i in range(n):
            if ctx[i] != first[i]:
                n = i
                break
    return first[:n]


def weight(origin: _Origin) -> float:
    """Estimated relative cost: the larger of its memory traffic and its compute (in byte units)."""
    return max(float(origin.bytes), float(origin.flops) / FLOPS_PER_BYTE, 0.0)


@dataclass(frozen=True)
class _Part:
    frame: Frame
    weight: float
    flops: float


def _parts(origins: Sequence[_Origin]) -> list[_Part]:
    merged: dict[Frame, list[float]] = {}
    for o in origins:
        where = o.stack[-1] if o.stack else None
        frame = Frame.part(
            o.op,
            where.file if where is not None else "",
            where.line if where is not None else 0,
            o.module.name if o.module is not None else "",
        )
        acc = merged.setdefault(frame, [0.0, 0.0])
        acc[0] += weight(o)
        acc[1] += float(o.flops)
    return [_Part(f, w, fl) for f, (w, fl) in merged.items()]


def split_exact(total: float, weights: Sequence[float]) -> list[float]:
    """``total`` split in proportion to ``weights`` (equal when all are 0), summing to ``total``.

    Integral totals (nanoseconds, counts) split into integers by largest remainder, so the sum is
    exact; other totals give the last share the rounding. Shares are never negative.
    """
    n = len(weights)
    if n == 0:
        return []
    wsum = float(sum(weights))
    fractions = [w / wsum for w in weights] if wsum > 0 else [1.0 / n] * n
    if total >= 0 and float(total).is_integer() and total < 2**53:
        whole = int(total)
        raw = [whole * f for f in fractions]
        ints = [int(r) for r in raw]
        rest = whole - sum(ints)
        by_remainder = sorted(range(n), key=lambda i: (raw[i] - ints[i], -i), reverse=True)
        for i in by_remainder[:rest]:
            ints[i] += 1
        return [float(v) for v in ints]
    shares = [total * f for f in fractions]
    shares[-1] = total - sum(shares[:-1])
    if shares[-1] < 0 <= total:
        shares[-1] = 0.0
    return shares


def place_compiled_kernel(
    kernel: Frame, origins: Sequence[FusedOrigin] | Sequence[Any], metrics: Mapping[str, float]
) -> list[tuple[list[Frame], dict[str, float]]]:
    """Paths (relative to the user context: python frames, module, [backward], kernel, [part]) and
    the metrics to add at each.

    When ``metrics`` has no ``flops``, the origins' FLOPs (from node shapes; exact, not estimated)
    are added to the kernel or its parts.
    """
    if not origins:
        return [([kernel], dict(metrics))]
    backward = any(o.backward for o in origins)
    contexts = [context_of(o) for o in origins]
    tail = [Frame.backward()] if backward else []
    distinct = {(c, o.stack[-1] if o.stack else None) for c, o in zip(contexts, origins, strict=True)}
    add_flops = "flops" not in metrics
    if len(distinct) == 1:
        path = [*contexts[0], *tail, kernel]
        values = dict(metrics)
        flops = sum(float(o.flops) for o in origins)
        if add_flops and flops:
            values["flops"] = flops
        return [(path, values)]

    base = [*common_prefix(contexts), *tail, kernel]
    parts = _parts(origins)
    weights = [p.weight for p in parts]
    per_part: list[dict[str, float]] = [{} for _ in parts]
    kernel_values: dict[str, float] = {}
    for name, value in metrics.items():
        if name in KERNEL_ONLY:
            kernel_values[name] = float(value)
            continue
        for i, share in enumerate(split_exact(float(value), weights)):
            per_part[i][name] = share
    if add_flops:
        for i, p in enumerate(parts):
            if p.flops:
                per_part[i]["flops"] = p.flops
    out: list[tuple[list[Frame], dict[str, float]]] = []
    if kernel_values:
        out.append((list(base), kernel_values))
    out.extend(([*base, p.frame], values) for p, values in zip(parts, per_part, strict=True))
    return out


__all__ = ["common_prefix", "context_of", "place_compiled_kernel", "split_exact", "weight"]
