"""Advisor rules that read the timeline, on literal profiles: idle, syncs, launches, comm, copies, ranks."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kernelscope.analysis.advisor import Finding, Severity, run_rules
from kernelscope.model import Frame, Profile, ProfileBuilder, TimelineBuilder
from kernelscope.model.timeline import LINKED, Category

US = 1_000
TRACE = {"source": {"format": "kineto"}}


@dataclass(frozen=True)
class Dev:
    """A device event launched by a runtime call on the host thread (times in µs)."""

    name: str
    start: float
    dur: float
    call_start: float
    call_dur: float = 5.0
    category: Category = Category.KERNEL
    line: int = 5
    device: str = "cuda:0"


def _profile(events: list[Dev], syncs: Sequence[tuple[int, float, float]] = ()) -> Profile:
    """``syncs``: (line, start µs, dur µs) of an ``aten::item`` op with a stream synchronize inside."""
    b = ProfileBuilder()
    tb = TimelineBuilder()
    for corr, e in enumerate(events):
        rank = e.device.rsplit("/", 1)[0] + "/" if "/" in e.device else ""
        thread = tb.track("thread 1", f"{rank}cpu", "thread")
        stream = tb.track("stream 7", e.device, "stream")
        op = b.path([Frame.python("t.py", e.line, "step"), Frame.op("aten::op")])
        kern = b.child(op, Frame.kernel(e.name, e.device, 7))
        b.add(kern, "time_ns", e.dur * US)
        b.add(kern, "count", 1)
        tb.add(op, thread, int(e.call_start * US), int(e.call_dur * US), Category.RUNTIME, correlation=corr)
        tb.add(kern, stream, int(e.start * US), int(e.dur * US), e.category, LINKED, corr)
    for line, start, dur in syncs:
        item = b.path([Frame.python("t.py", line, "step"), Frame.op("aten::item")])
        b.add(item, "cpu_time_ns", dur * US)
        thread = tb.track("thread 1", "cpu", "thread")
        tb.add(item, thread, int(start * US), int(dur * US), Category.OP)
        tb.add(item, thread, int((start + 1) * US), int((dur - 2) * US), Category.SYNC)
    return b.build(TRACE, tb.build())


def _only(findings: list[Finding], rule: str) -> Finding:
    (f,) = [f for f in findings if f.rule == rule]
    return f


def test_idle_after_an_item_is_a_sync_finding_and_routes_the_idle() -> None:
    p = _profile([Dev("gemm", 0, 100, -10), Dev("gemm", 5000, 100, 4990)], syncs=[(9, 100, 100)])
    findings = run_rules(p)
    sync = _only(findings, "host_sync")
    assert (sync.file, sync.line, sync.occurrences, sync.severity) == ("t.py", 9, 1, Severity.WARNING)
    assert sync.estimated_saving_ms == 4.8  # GPU idle from the sync's end (200 µs) to the next kernel (5000 µs)
    idle = _only(findings, "gpu_idle")
    assert "host-device syncs" in idle.title and idle.device == "cuda:0"
    assert findings[0] is sync  # ordered by saving


def test_busy_gpu_has_no_idle_or_sync_findings() -> None:
    p = _profile([Dev("gemm", i * 100, 100, i * 100 - 50) for i in range(20)])
    assert [f.rule for f in run_rules(p)] == []


def test_launch_bound_when_kernels_are_shorter_than_their_launch() -> None:
    events = [Dev("tiny", 10 * i + 6, 1, 10 * i, call_dur=5) for i in range(200)]
    f = _only(run_rules(p := _profile(events)), "launch_bound")
    assert (f.line, f.occurrences, f.device) == (5, 200, "cuda:0")
    assert f.estimated_saving_ms is not None and f.estimated_saving_ms <= 2.0  # capped by the host-wait idle
    assert "launch_bound" not in {x.rule for x in run_rules(p, thresholds={"launch_bound.min_kernels": 500})}


def test_exposed_communication_and_pageable_copies() -> None:
    p = _profile(
        [
            Dev("ncclKernel_AllReduce", 0, 1000, -10, category=Category.COMM, line=12),
            Dev("gemm", 0, 200, -20),
            Dev("Memcpy HtoD (Pageable -> Device)", 1000, 2000, 990, category=Category.MEMCPY, line=3),
        ]
    )
    findings = run_rules(p)
    comm = _only(findings, "exposed_comm")
    assert (comm.line, comm.estimated_saving_ms) == (12, 0.8)
    copy = _only(findings, "pageable_memcpy")
    assert (copy.line, copy.estimated_saving_ms, copy.severity) == (3, 1.0, Severity.WARNING)


def test_a_rank_that_computes_longer_is_a_straggler() -> None:
    p = _profile([Dev("gemm", 0, 100, -10, device="rank0/cuda:0"), Dev("gemm", 0, 200, -10, device="rank1/cuda:0")])
    f = _only(run_rules(p), "rank_straggler")
    assert (f.device, f.estimated_saving_ms) == ("rank1/cuda:0", 0.1)
