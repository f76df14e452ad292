"""Filling in the calls made after a live run's shape sample (attribute/shapes.py)."""

from __future__ import annotations

from kernelscope.attribute.shapes import SHAPE_METRICS, extrapolate, snapshot
from kernelscope.model import Frame, FrameKind, ProfileBuilder


def _calls(b: ProfileBuilder, node: int, n: int, flops: float) -> None:
    b.add(node, "count", n)
    if flops:
        b.add(node, "flops", flops)


def test_later_calls_get_their_contexts_flops_once() -> None:
    b = ProfileBuilder()
    op = b.child(0, Frame(FrameKind.OP, "aten::addmm"))  # eager: FLOPs only from recorded shapes
    kernel = b.child(0, Frame(FrameKind.KERNEL, "cpp_fused_0"))  # compiled: FLOPs from its graph, shapes or not
    _calls(b, op, 2, 200.0)
    _calls(b, kernel, 2, 60.0)
    sampled = snapshot(b, SHAPE_METRICS)
    _calls(b, op, 3, 0.0)  # after the sample: no shapes, no FLOPs
    _calls(b, kernel, 3, 90.0)  # ... its FLOPs all the same
    assert extrapolate(b, sampled, SHAPE_METRICS) == 3  # only the eager op's calls were filled in
    flops = b.metric_values("flops")
    assert (flops[op], flops[kernel]) == (500.0, 150.0)  # (the kernel's were 240 before: counted twice)
