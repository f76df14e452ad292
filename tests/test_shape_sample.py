"""The live run's shape sample (collect/sampling.py) and filling in the calls made after it (attribute/shapes.py)."""

from __future__ import annotations

from kernelscope.attribute.shapes import SHAPE_METRICS, extrapolate, snapshot
from kernelscope.collect.sampling import Sampling
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


def test_a_turnover_is_no_gap_however_long_its_stop_and_fold_take() -> None:
    """A sample window folds in the program's process (0.05-0.1 s on nanoGPT): counted from the stop, every
    turnover was a gap, so the sample's steps never ran two in a row and allocations ended with the first window."""
    s = Sampling("sample", "sample", shape_seconds=30.0)
    s.opening(0.0)
    for now in (1.0, 2.0, 3.0):  # each window holds one boundary and turns over
        assert s.window_memory and s.window_shapes and not s.done
        s.step(recording=True)
        s.closed(recorded_seconds=now)
        s.resumed(now + 0.1)  # the stop and the fold took 0.1 s: the program did not run
        s.opening(now + 0.1)
    assert s.done and not s.window_shapes  # three boundaries in a row: two whole steps sampled
    late = Sampling("sample", "sample", shape_seconds=30.0)
    late.opening(0.0)
    late.closed(recorded_seconds=1.0)
    late.resumed(1.1)
    late.opening(1.2)  # the program ran unrecorded for 0.1 s: a gap, allocations end
    assert late.window_shapes and not late.window_memory
