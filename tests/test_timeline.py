"""Timeline analysis on small synthetic profiles: breakdown, idle gaps, launches, syncs."""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernelscope.analysis.breakdown import Breakdown, DeviceBreakdown, breakdown
from kernelscope.analysis.idle import ClassTotal, Gap, GapClass, StreamGaps, idle_gaps
from kernelscope.analysis.intervals import idle_after, merge, union_length
from kernelscope.analysis.launch import DeviceLaunch, launch_stats
from kernelscope.analysis.syncs import SyncKind, SyncLine, SyncPoint, syncs
from kernelscope.analysis.timeline import analyze
from kernelscope.model import Category, Frame, Profile, ProfileBuilder, TimelineBuilder
from kernelscope.model.timeline import LINKED

US = 1_000  # ns
TRAIN = Frame.python("train.py", 10, "step")
LIB = Frame.python("torch/nn/modules/module.py", 1750, "_call_impl")


@dataclass
class Trace:
    """Builds a profile + timeline the way an importer would: host calls launch device events."""

    pb: ProfileBuilder = field(default_factory=ProfileBuilder)
    tb: TimelineBuilder = field(default_factory=TimelineBuilder)
    _corr: itertools.count[int] = field(default_factory=lambda: itertools.count(100))

    def thread(self, name: str = "thread 1", device: str = "cpu") -> int:
        return self.tb.track(name, device, "thread")

    def stream(self, name: str = "stream 7", device: str = "cuda:0") -> int:
        return self.tb.track(name, device, "stream")

    def device(
        self,
        name: str,
        start_us: float,
        dur_us: float,
        *,
        stream: int | None = None,
        category: Category = Category.KERNEL,
        launch_us: float | None = None,
        launch_dur_us: float = 5.0,
        context: Sequence[Frame] = (TRAIN, Frame.op("aten::mm")),
        thread: int | None = None,
    ) -> None:
        """A device event; with ``launch_us``, also the runtime call that launched it (LINKED)."""
        st_ = self.stream() if stream is None else stream
        node = self.pb.path([*context, Frame.kernel(name, "cuda:0", 7)])
        self.pb.add(node, "time_ns", dur_us * US)
        corr = next(self._corr)
        flags = 0
        if launch_us is not None:
            host = self.thread() if thread is None else thread
            parent = self.pb.path(context)
            self.tb.add(parent, host, int(launch_us * US), int(launch_dur_us * US), Category.RUNTIME, 0, corr)
            flags = LINKED
        self.tb.add(node, st_, int(start_us * US), int(dur_us * US), category, flags, corr)

    def host(self, context: Sequence[Frame], start_us: float, dur_us: float, category: Category) -> None:
        node = self.pb.path(context)
        self.tb.add(node, self.thread(), int(start_us * US), int(dur_us * US), category)

    def build(self) -> Profile:
        p = self.pb.build(timeline=self.tb.build())
        p.check()
        return p


def dev(device: str = "cuda:0", **ns: int) -> DeviceBreakdown:
    base = dict(
        total_ns=0,
        busy_ns=0,
        computation_ns=0,
        exposed_comm_ns=0,
        exposed_memcpy_ns=0,
        total_comm_ns=0,
        total_memcpy_ns=0,
        events=0,
        unlinked_events=0,
        unlinked_ns=0,
    )
    base.update(ns)
    return DeviceBreakdown(device=device, **base)


# --- intervals ---------------------------------------------------------------------------------
def test_merge_joins_overlapping_nested_and_touching_intervals() -> None:
    s = np.array([5, 0, 2, 10, 20, 20], dtype=np.int64)
    e = np.array([8, 3, 4, 12, 20, 25], dtype=np.int64)  # [20,20) is empty
    ms, me = merge(s, e)
    assert ms.tolist() == [0, 5, 10, 20]
    assert me.tolist() == [4, 8, 12, 25]
    assert union_length(s, e) == 4 + 3 + 2 + 5


def test_idle_after_is_zero_inside_busy_time_and_after_the_last_interval() -> None:
    ms, me = np.array([0, 10], dtype=np.int64), np.array([5, 20], dtype=np.int64)
    t = np.array([-3, 2, 5, 7, 15, 20, 30], dtype=np.int64)
    assert idle_after(ms, me, t).tolist() == [0, 0, 5, 3, 0, 0, 0]


# --- breakdown ---------------------------------------------------------------------------------
def test_breakdown_comm_fully_overlapped_by_compute_is_not_exposed() -> None:
    # given: a kernel 0-100 µs and a collective 20-60 µs on a second stream
    t = Trace()
    t.device("gemm", 0, 100, launch_us=-10)
    t.device("ncclAllReduce", 20, 40, stream=t.stream("stream 9"), category=Category.COMM, launch_us=-5)
    # when
    b = breakdown(t.build())
    # then
    assert b == Breakdown(
        (dev(total_ns=100 * US, busy_ns=100 * US, computation_ns=100 * US, total_comm_ns=40 * US, events=2),)
    )


def test_breakdown_comm_partially_overlapped_and_memcpy_under_kernels() -> None:
    # given: kernel 0-50, comm 40-80 (10 overlapped), memcpy 10-30 (under the kernel),
    # memcpy 75-95 (5 under comm, 15 exposed), memset 100-110 (computation)
    t = Trace()
    s2, s3 = t.stream("stream 9"), t.stream("stream 11")
    t.device("k", 0, 50, launch_us=-1)
    t.device("ncclAllGather", 40, 40, stream=s2, category=Category.COMM, launch_us=-1)
    t.device("Memcpy HtoD", 10, 20, stream=s3, category=Category.MEMCPY, launch_us=-1)
    t.device("Memcpy DtoD", 75, 20, stream=s3, category=Category.MEMCPY, launch_us=-1)
    t.device("Memset", 100, 10, category=Category.MEMSET, launch_us=-1)
    # when
    b = breakdown(t.build())
    # then
    assert b.devices == (
        dev(
            total_ns=110 * US,
            busy_ns=105 * US,  # 0-95 and 100-110
            computation_ns=60 * US,
            exposed_comm_ns=30 * US,
            exposed_memcpy_ns=15 * US,
            total_comm_ns=40 * US,
            total_memcpy_ns=40 * US,
            events=5,
        ),
    )
    assert b.devices[0].idle_ns == 5 * US


def test_breakdown_leaves_out_unlinked_events_and_reports_them() -> None:
    # given: a kernel queued before the trace began (no runtime call), then a linked one
    t = Trace()
    t.device("old", 0, 30)  # unlinked
    t.device("new", 50, 10, launch_us=40)
    # when
    b = breakdown(t.build())
    # then: the span starts at the first linked event
    assert b.devices == (
        dev(
            total_ns=10 * US, busy_ns=10 * US, computation_ns=10 * US, events=1, unlinked_events=1, unlinked_ns=30 * US
        ),
    )


def test_breakdown_is_per_device_and_ignores_host_rows() -> None:
    t = Trace()
    t.device("a", 0, 10, launch_us=-5)
    t.device("b", 100, 30, stream=t.stream("stream 7", "cuda:1"), launch_us=90)
    t.host([TRAIN, Frame.op("aten::mm")], 0, 1000, Category.OP)
    b = breakdown(t.build())
    assert b.devices == (
        dev("cuda:0", total_ns=10 * US, busy_ns=10 * US, computation_ns=10 * US, events=1),
        dev("cuda:1", total_ns=30 * US, busy_ns=30 * US, computation_ns=30 * US, events=1),
    )


def test_breakdown_json_has_the_documented_keys() -> None:
    t = Trace()
    t.device("a", 0, 10, launch_us=-5)
    t.device("b", 30, 10, launch_us=-5)
    doc = breakdown(t.build()).to_json()
    assert doc["schema"] == 1
    (d,) = doc["devices"]
    assert d == {
        "device": "cuda:0",
        "total_time_ms": 0.04,
        "busy_time_ms": 0.02,
        "idle_time_ms": 0.02,
        "computation_time_ms": 0.02,
        "exposed_comm_time_ms": 0.0,
        "exposed_memcpy_time_ms": 0.0,
        "total_comm_time_ms": 0.0,
        "total_memcpy_time_ms": 0.0,
        "busy_time_pct": 50.0,
        "idle_time_pct": 50.0,
        "computation_time_pct": 50.0,
        "exposed_comm_time_pct": 0.0,
        "exposed_memcpy_time_pct": 0.0,
        "total_comm_time_pct": 0.0,
        "total_memcpy_time_pct": 0.0,
        "events": 2,
        "unlinked_events": 0,
        "unlinked_time_ms": 0.0,
    }


def test_no_timeline_gives_empty_results() -> None:
    p = ProfileBuilder().build()
    r = analyze(p)
    assert r.to_json() == {
        "schema": 1,
        "devices": [],
        "idle_gaps": {
            "kernel_wait_threshold_us": 5.0,
            "totals": {k.value: {"count": 0, "time_ms": 0.0} for k in GapClass},
            "streams": [],
            "top": [],
        },
        "launch": [],
        "syncs": {"count": 0, "host_time_ms": 0.0, "idle_after_ms": 0.0, "by_line": [], "top": [], "untimed": []},
    }


# --- property: the breakdown against a brute-force reference ----------------------------------
def _covered(intervals: list[tuple[int, int]]) -> set[int]:
    return {t for s, e in intervals for t in range(s, e)}


events_st = st.lists(
    st.tuples(
        st.integers(0, 60),  # start
        st.integers(0, 15),  # duration
        st.sampled_from([Category.KERNEL, Category.MEMCPY, Category.MEMSET, Category.COMM]),
        st.booleans(),  # linked
        st.integers(0, 2),  # stream
    ),
    min_size=0,
    max_size=25,
)


@settings(max_examples=200, deadline=None)
@given(events_st)
def test_breakdown_matches_brute_force_and_keeps_its_invariants(
    events: list[tuple[int, int, Category, bool, int]],
) -> None:
    t = Trace()
    streams = [t.stream(f"stream {i}") for i in range(3)]
    for i, (s, d, cat, is_linked, k) in enumerate(events):
        t.device(f"e{i}", s / US, d / US, stream=streams[k], category=cat, launch_us=-1 if is_linked else None)
    b = breakdown(t.build())
    lk = [(s, s + d, cat) for s, d, cat, is_linked, _ in events if is_linked]
    if not lk:
        assert b.devices == () or b.devices[0].events == 0
        return
    (got,) = b.devices
    every = _covered([(s, e) for s, e, _ in lk])
    comp = _covered([(s, e) for s, e, c in lk if c in (Category.KERNEL, Category.MEMSET)])
    comm = _covered([(s, e) for s, e, c in lk if c is Category.COMM])
    memcpy = _covered([(s, e) for s, e, c in lk if c is Category.MEMCPY])
    assert got.total_ns == max(e for _, e, _ in lk) - min(s for s, _, _ in lk)
    assert got.busy_ns == len(every)
    assert got.computation_ns == len(comp)
    assert got.exposed_comm_ns == len(comm - comp)
    assert got.exposed_memcpy_ns == len(memcpy - comp - comm)
    assert got.total_comm_ns == len(comm)
    assert got.total_memcpy_ns == len(memcpy)
    assert 0 <= got.computation_ns <= got.busy_ns <= got.total_ns
    assert got.exposed_comm_ns <= got.total_comm_ns
    assert got.exposed_memcpy_ns <= got.total_memcpy_ns
    assert got.busy_ns == got.computation_ns + got.exposed_comm_ns + got.exposed_memcpy_ns
    assert got.unlinked_events == len(events) - len(lk)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(-50, 50), st.integers(-5, 20)), max_size=30))
def test_union_length_matches_brute_force(pairs: list[tuple[int, int]]) -> None:
    s = np.array([a for a, _ in pairs], dtype=np.int64)
    e = np.array([a + d for a, d in pairs], dtype=np.int64)
    assert union_length(s, e) == len(_covered([(a, a + d) for a, d in pairs]))


# --- idle gaps ---------------------------------------------------------------------------------
def test_gaps_are_classified_host_wait_kernel_wait_and_other() -> None:
    # given: on one stream
    #   k1 0-10, k2 launched at 5 (before k1 ended), starts 12   -> 2 µs gap: kernel wait
    #   k3 launched at 30 (after k2 ended at 20), starts 35      -> 15 µs gap: host wait
    #   k4 launched at 36 (queued), starts 100                   -> 55 µs gap: other
    #   k5 unlinked, starts 104                                  -> 3 µs gap: kernel wait
    t = Trace()
    t.device("k1", 0, 10, launch_us=-5)
    t.device("k2", 12, 8, launch_us=5)
    t.device("k3", 35, 10, launch_us=30, context=(TRAIN, Frame.op("aten::add")))
    t.device("k4", 100, 1, launch_us=36, context=(LIB, Frame.python("model.py", 7, "fwd"), Frame.op("aten::mul")))
    t.device("k5", 104, 1)
    # when
    g = idle_gaps(t.build(), top=3)
    # then
    assert g.streams == (
        StreamGaps(
            "cuda:0",
            "stream 7",
            5,
            (
                (GapClass.HOST_WAIT, ClassTotal(1, 15 * US)),
                (GapClass.KERNEL_WAIT, ClassTotal(2, 5 * US)),
                (GapClass.OTHER, ClassTotal(1, 55 * US)),
            ),
        ),
    )
    assert g.top == (
        Gap("cuda:0", "stream 7", GapClass.OTHER, 45 * US, 55 * US, "k4", "aten::mul", "model.py:7"),
        Gap("cuda:0", "stream 7", GapClass.HOST_WAIT, 20 * US, 15 * US, "k3", "aten::add", "train.py:10"),
        Gap("cuda:0", "stream 7", GapClass.KERNEL_WAIT, 101 * US, 3 * US, "k5", "aten::mm", "train.py:10"),
    )
    assert g.totals()[GapClass.KERNEL_WAIT] == ClassTotal(2, 5 * US)


def test_gaps_respect_the_threshold_and_overlap_within_a_stream() -> None:
    # given: k2 lies inside k1 (overlap on one stream); k3 follows k1 after 8 µs, launched early
    t = Trace()
    t.device("k1", 0, 20, launch_us=-5)
    t.device("k2", 5, 5, launch_us=-4)
    t.device("k3", 28, 2, launch_us=-3)
    p = t.build()
    # when the threshold is 10 µs, the 8 µs gap is a kernel wait; with the default 5 µs it is other
    wide = idle_gaps(p, kernel_wait_ns=10 * US)
    narrow = idle_gaps(p)
    assert dict(wide.streams[0].classes)[GapClass.KERNEL_WAIT] == ClassTotal(1, 8 * US)
    assert dict(narrow.streams[0].classes)[GapClass.OTHER] == ClassTotal(1, 8 * US)
    assert narrow.streams[0].gaps == 1


# --- launch statistics -------------------------------------------------------------------------
def test_launch_statistics() -> None:
    # given: three kernels with launch delays 10, 20, 30 µs; runtime calls of 5 µs;
    # two kernels shorter than their 5 µs launch call; one kernel unlinked
    t = Trace()
    t.device("a", 10, 2, launch_us=0)
    t.device("b", 40, 3, launch_us=20)
    t.device("c", 80, 50, launch_us=50)
    t.device("d", 200, 1)
    t.device("Memcpy HtoD", 300, 1, category=Category.MEMCPY, launch_us=250)  # not a kernel
    # when
    stats = launch_stats(t.build())
    # then
    assert stats.devices == (
        DeviceLaunch(
            device="cuda:0",
            kernels=4,
            launched=3,
            delay_median_ns=20 * US,
            delay_p90_ns=28 * US,
            delay_max_ns=30 * US,
            launch_call_mean_ns=5 * US,
            shorter_than_launch=2,
            shorter_than_launch_ns=5 * US,
        ),
    )


def test_launch_join_stays_within_a_rank() -> None:
    # given: the same correlation id in two ranks; each kernel joins its own rank's call
    t = Trace()
    h0, h1 = t.thread("thread 1", "rank0/cpu"), t.thread("thread 1", "rank1/cpu")
    s0, s1 = t.stream("stream 7", "rank0/cuda:0"), t.stream("stream 7", "rank1/cuda:0")
    n = t.pb.path([TRAIN, Frame.kernel("k")])
    t.tb.add(n, h0, 0, 1000, Category.RUNTIME, 0, 5)
    t.tb.add(n, h1, 50_000, 1000, Category.RUNTIME, 0, 5)
    t.tb.add(n, s0, 10_000, 1000, Category.KERNEL, LINKED, 5)
    t.tb.add(n, s1, 70_000, 1000, Category.KERNEL, LINKED, 5)
    stats = launch_stats(t.build())
    assert [(d.device, d.delay_max_ns) for d in stats.devices] == [("rank0/cuda:0", 10_000), ("rank1/cuda:0", 20_000)]


# --- sync points -------------------------------------------------------------------------------
def test_sync_points_fold_nested_calls_and_measure_gpu_idle_after() -> None:
    # given: at train.py:20, aten::item (100-160 µs) ⊃ _local_scalar_dense ⊃ a pageable DtoH copy
    # launched at 110 and a cudaStreamSynchronize 115-158; the GPU runs 0-150, then the next kernel at 190.
    # At train.py:30 a bare cudaDeviceSynchronize 300-310; the next kernel starts at 330.
    t = Trace()
    line20 = Frame.python("train.py", 20, "step")
    line30 = Frame.python("train.py", 30, "step")
    item = [line20, Frame.op("aten::item")]
    lsd = [*item, Frame.op("aten::_local_scalar_dense")]
    t.device("gemm", 0, 140, launch_us=-1, context=(line20, Frame.op("aten::mm")))
    t.host(item, 100, 60, Category.OP)
    t.host(lsd, 105, 54, Category.OP)
    t.device("Memcpy DtoH (Device -> Pageable)", 145, 5, category=Category.MEMCPY, launch_us=110, context=lsd)
    t.host([*lsd, Frame.op("cudaStreamSynchronize")], 115, 43, Category.SYNC)
    t.device("next", 190, 10, launch_us=170, context=(line20, Frame.op("aten::add")))
    t.host([line30, Frame.op("cudaDeviceSynchronize")], 300, 10, Category.SYNC)
    t.device("later", 330, 10, launch_us=320, context=(line30, Frame.op("aten::add")))
    # when
    s = syncs(t.build())
    # then
    item_point = SyncPoint(
        SyncKind.ITEM, "aten::item", "thread 1", 100 * US, 60 * US, 30 * US, "aten::item", "train.py:20", 3
    )
    dev_sync = SyncPoint(
        SyncKind.SYNC_CALL,
        "cudaDeviceSynchronize",
        "thread 1",
        300 * US,
        10 * US,
        20 * US,
        "cudaDeviceSynchronize",
        "train.py:30",
    )
    assert s.top == (item_point, dev_sync)
    assert s.by_line == (
        SyncLine("train.py:20", 1, 60 * US, 30 * US, (("aten::item", 1),)),
        SyncLine("train.py:30", 1, 10 * US, 20 * US, (("cudaDeviceSynchronize", 1),)),
    )
    assert (s.count, s.host_ns, s.idle_after_ns) == (2, 70 * US, 50 * US)


def test_syncs_inside_one_op_call_are_one_point() -> None:
    # given: as the Kineto importer records `x.cpu()` at train.py:40: an aten::copy_ call (100-170 µs)
    # launching a pageable DtoH copy (call 105-150, copy 140-148) and then calling
    # cudaStreamSynchronize (152-160); both runtime rows point at the aten::copy_ node.
    # A bare synchronize at the top of train.py:50 points at its python frame.
    t = Trace()
    line40, line50 = Frame.python("train.py", 40, "step"), Frame.python("train.py", 50, "step")
    copy_ = [line40, Frame.op("aten::copy_")]
    t.device("gemm", 0, 130, launch_us=-1, context=(line40, Frame.op("aten::mm")))
    t.host(copy_, 100, 70, Category.OP)
    t.device(
        "Memcpy DtoH (Device -> Pageable)",
        140,
        8,
        category=Category.MEMCPY,
        launch_us=105,
        launch_dur_us=45,
        context=copy_,
    )
    t.host(copy_, 152, 8, Category.SYNC)
    t.device("next", 200, 10, launch_us=190, context=(line40, Frame.op("aten::add")))
    t.host([line50], 300, 5, Category.SYNC)
    t.device("after", 320, 10, launch_us=310, context=(line50, Frame.op("aten::add")))
    # when
    s = syncs(t.build())
    # then
    assert s.top == (
        SyncPoint(
            SyncKind.PAGEABLE_COPY,
            "Memcpy DtoH (Device -> Pageable)",
            "thread 1",
            100 * US,
            70 * US,
            30 * US,
            "aten::copy_",
            "train.py:40",
            1,
        ),
        SyncPoint(SyncKind.SYNC_CALL, "synchronize", "thread 1", 300 * US, 5 * US, 15 * US, None, "train.py:50"),
    )


def test_item_ops_known_only_from_the_tree_are_counted_untimed() -> None:
    # given: no OP rows in the timeline, but aten::item nodes in the tree (5 calls)
    t = Trace()
    node = t.pb.path([Frame.python("eval.py", 3, "main"), Frame.op("aten::item")])
    t.pb.path([Frame.python("eval.py", 3, "main"), Frame.op("aten::item"), Frame.op("aten::_local_scalar_dense")])
    t.pb.add(node, "count", 5)
    t.device("k", 0, 10, launch_us=-2)
    # when
    s = syncs(t.build())
    # then
    assert s.untimed == (("eval.py:3", "aten::item", 5),)
    assert s.by_line == (SyncLine("eval.py:3", 5, 0, 0, (("aten::item", 5),)),)


def test_pageable_copy_without_launch_uses_the_copy_itself() -> None:
    t = Trace()
    t.device("Memcpy DtoH (Device -> Pageable)", 0, 10, category=Category.MEMCPY)
    t.device("k", 25, 10, launch_us=20)
    s = syncs(t.build())
    (p,) = s.top
    assert (p.kind, p.track, p.start_ns, p.dur_ns, p.idle_after_ns) == (
        SyncKind.PAGEABLE_COPY,
        "stream 7",
        0,
        10 * US,
        15 * US,
    )


# --- the whole report --------------------------------------------------------------------------
def test_report_json_round_trips_through_json() -> None:
    t = Trace()
    t.device("k1", 0, 10, launch_us=-5)
    t.device("k2", 30, 10, launch_us=25)
    t.host([TRAIN, Frame.op("cudaStreamSynchronize")], 12, 10, Category.SYNC)
    doc = analyze(t.build()).to_json()
    again = json.loads(json.dumps(doc, allow_nan=False))
    assert again == doc
    assert set(doc) == {"schema", "devices", "idle_gaps", "launch", "syncs"}
    assert doc["idle_gaps"]["totals"]["host_wait"] == {"count": 1, "time_ms": 0.02}
    assert doc["syncs"]["top"][0]["idle_after_us"] == 8.0


@pytest.mark.parametrize("name", ["[bold]x[/bold]", "</script>&", "k" * 10_000])
def test_hostile_names_render(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    from kernelscope.render.console import make_console
    from kernelscope.render.timeline_text import render_timeline

    t = Trace()
    t.device(name, 0, 10, launch_us=-5, context=(Frame.python(name, 1, name), Frame.op(name)))
    t.device(name, 100, 10, launch_us=50, context=(Frame.python(name, 1, name), Frame.op(name)))
    t.host([Frame.python(name, 1, name), Frame.op(name)], 12, 10, Category.SYNC)
    render_timeline(make_console(width=100), analyze(t.build()))
    out = capsys.readouterr().out
    assert "GPU timeline: cuda:0" in out
    assert "host_wait" in out
    if name.startswith("["):
        assert "[bold]x[/bold]" in out


# --- the CLI -------------------------------------------------------------------------------------
def _saved(tmp_path: Path, profile: Profile) -> str:
    path = tmp_path / "p.ksprof"
    profile.save(str(path))
    return str(path)


def test_cli_timeline_json_and_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kernelscope.cli.main import main

    # given a saved profile with a timeline
    t = Trace()
    t.device("k1", 0, 10, launch_us=-5)
    t.device("k2", 30, 10, launch_us=25)
    path = _saved(tmp_path, t.build())
    # when / then: --json is the documented document
    assert main(["timeline", path, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["devices"][0]["busy_time_ms"] == 0.02
    assert doc["idle_gaps"]["totals"]["host_wait"]["count"] == 1
    # and the text output names the device and the gap class
    assert main(["timeline", path]) == 0
    out = capsys.readouterr().out
    assert "GPU timeline: cuda:0" in out and "host wait" in out


def test_cli_timeline_without_a_timeline_is_one_clear_error(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from kernelscope.cli.main import main

    pb = ProfileBuilder()
    pb.add(pb.path([TRAIN]), "time_ns", 5.0)
    path = _saved(tmp_path, pb.build())
    assert main(["timeline", path, "--json"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "has no timeline" in err


def test_breakdown_summarises_across_ranks() -> None:
    # given two ranks' devices, one idler than the other
    b = Breakdown(
        (
            dev("rank 0/cuda:0", total_ns=100, busy_ns=90, computation_ns=80),
            dev("rank 1/cuda:1", total_ns=120, busy_ns=60, computation_ns=50),
        )
    )
    # then the merged view gives min / mean / max and names the most idle device
    merged = b.to_json()["across_devices"]
    assert merged["devices"] == 2
    assert merged["busy_time_ms"] == pytest.approx({"min": 60e-6, "mean": 75e-6, "max": 90e-6})
    assert merged["idle_time_ms"] == pytest.approx({"min": 10e-6, "mean": 35e-6, "max": 60e-6})
    assert merged["most_idle_device"] == "rank 1/cuda:1"
    assert Breakdown((dev(),)).across_devices() is None
