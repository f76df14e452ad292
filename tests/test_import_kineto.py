"""Kineto importer: synthetic traces compared as whole trees, and facts about real traces."""

from __future__ import annotations

import csv
import gzip
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kernelscope.errors import BadInputError
from kernelscope.importers import find_importer, import_file
from kernelscope.importers.kineto import reader as reader_mod
from kernelscope.model import Category, FrameKind, Profile
from kernelscope.model.timeline import LINKED

TRACES = Path(__file__).parents[1].parent / "shared" / "traces"


# --- builders ----------------------------------------------------------------
def X(cat: str, name: str, ts: float, dur: float, pid: Any = 1, tid: Any = 1, **args: Any) -> dict[str, Any]:
    ev: dict[str, Any] = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if args:
        # Kineto's capitalised arg names have spaces ("External id"); lower-case ones keep "_" (kernel_file)
        ev["args"] = {(k.replace("_", " ") if k[0].isupper() else k): v for k, v in args.items()}
    return ev


def kernel(name: str, ts: float, dur: float, corr: int, stream: int = 7, cat: str = "kernel") -> dict[str, Any]:
    return {
        "ph": "X",
        "cat": cat,
        "name": name,
        "pid": 0,
        "tid": stream,
        "ts": ts,
        "dur": dur,
        "args": {"device": 0, "stream": stream, "correlation": corr},
    }


def runtime(name: str, ts: float, dur: float, corr: int, tid: int = 1, cat: str = "cuda_runtime") -> dict[str, Any]:
    return {
        "ph": "X",
        "cat": cat,
        "name": name,
        "pid": 1,
        "tid": tid,
        "ts": ts,
        "dur": dur,
        "args": {"correlation": corr},
    }


def write(tmp_path: Path, events: list[Any], name: str = "trace.json", **header: Any) -> str:
    doc = {"schemaVersion": 1, **header, "traceEvents": events}
    path = tmp_path / name
    data = json.dumps(doc, indent=1).encode()
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    return str(path)


def tree(p: Profile, metrics: tuple[str, ...] = ("time_ns", "count")) -> Any:
    """Whole tree as nested (label, {metric: exclusive}, [children]) with children sorted by label."""

    def node(n: int) -> Any:
        vals = {m: float(p.exclusive(m)[n]) for m in metrics if p.exclusive(m)[n]}
        kids = sorted((node(k) for k in p.children[n]), key=lambda t: t[0])
        return (p.frame_of(n).label(), vals, kids)

    return node(0)


# --- the basic joins ------------------------------------------------------------
EAGER = [
    X("user_annotation", "ProfilerStep#3", 10, 100),
    X("python_function", "train.py(10): <module>", 0, 200, Python_id=1),
    X("python_function", "torch/nn/modules/module.py(1750): _call_impl", 11, 80),
    X("python_function", "nn.Module: Linear_0", 12, 70),
    X("python_function", "model.py(27): forward", 13, 60),
    X("python_function", "<built-in method linear of PyCapsule object at 0x1>", 14, 50),
    X("cpu_op", "aten::linear", 15, 40, External_id=5),
    X("cpu_op", "aten::addmm", 16, 30, External_id=6, Input_Dims=[[4], [2, 3], [3, 4]]),
    runtime("cudaLaunchKernel", 17, 5, corr=100),
    runtime("cudaStreamSynchronize", 60, 10, corr=101),
    kernel("gemm", 30, 8, corr=100),
    kernel("old_kernel", 1, 2, corr=7),
    {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 18, "args": {"Bytes": 64}},
    {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 19, "args": {"Bytes": -64}},
    {"ph": "s", "id": 100, "pid": 1, "tid": 1, "ts": 17, "cat": "ac2g", "name": "ac2g"},
]


def test_eager_trace_builds_the_expected_tree(tmp_path: Path) -> None:
    # given a step, user/framework python frames, a module, nested ops, a launch and a kernel from before the trace
    path = write(tmp_path, EAGER)
    # when it is imported
    p = import_file(path)
    # then framework frames are gone, the step is on top, the kernel is under its op
    p.check()
    assert tree(p) == (
        "<root>",
        {},
        [
            ("[ProfilerStep#3]", {"count": 1.0}, [
                ("train.py:10 <module>", {}, [
                    ("Linear_0 (Linear)", {"count": 1.0}, [
                        ("model.py:27 forward", {"count": 1.0}, [
                            ("aten::linear", {"count": 1.0}, [
                                ("aten::addmm", {"count": 1.0}, [("gemm", {"time_ns": 8000.0, "count": 1.0}, [])]),
                            ]),
                        ]),
                    ]),
                ]),
            ]),
            ("[launched before trace]", {}, [("old_kernel", {"time_ns": 2000.0, "count": 1.0}, [])]),
            ("train.py:10 <module>", {"count": 1.0}, []),
        ],
    )  # fmt: skip
    assert p.metadata["import_warnings"] == {"device events whose launch is not in the trace": 1}
    # python_function events name functions (def lines), not the lines that ran: diff compares them by function
    assert p.metadata["python_lines"] == "def"


def test_eager_trace_metrics_flops_memory_cpu_time(tmp_path: Path) -> None:
    p = import_file(write(tmp_path, EAGER))
    addmm = next(n for n in range(len(p)) if p.frame_of(n).name == "aten::addmm")
    linear = int(p.parent[addmm])
    assert p.exclusive("flops")[addmm] == 2 * 2 * 3 * 4  # innermost op only
    assert p.exclusive("flops")[linear] == 0
    assert p.exclusive("alloc_bytes")[addmm] == 64  # the free is not an allocation
    # addmm self time: 30 µs minus the 5 µs launch; the launch's own time stays at addmm (its context)
    assert p.exclusive("cpu_time_ns")[addmm] == 30_000
    assert p.exclusive("cpu_time_ns")[linear] == 10_000
    # every host µs of the thread is somewhere: the outermost frame covers 200 µs
    assert p.total("cpu_time_ns") == 200_000 + 0  # the step is nested in <module>; no double counting


def test_eager_trace_timeline_rows(tmp_path: Path) -> None:
    p = import_file(write(tmp_path, EAGER))
    tl = p.timeline
    assert tl is not None
    rows = {
        (
            p.frame_of(int(n)).label(),
            tl.tracks[int(t)].name,
            tl.tracks[int(t)].device,
            Category(int(c)).name,
            int(f),
            int(k),
        )
        for n, t, c, f, k in zip(tl.node, tl.track, tl.category, tl.flags, tl.correlation, strict=True)
    }
    assert rows == {
        # the user's lines, modules and steps keep their intervals too (an export writes them back)
        ("[ProfilerStep#3]", "thread 1", "cpu", "FRAME", 0, -1),
        ("train.py:10 <module>", "thread 1", "cpu", "FRAME", 0, -1),
        ("model.py:27 forward", "thread 1", "cpu", "FRAME", 0, -1),
        ("Linear_0 (Linear)", "thread 1", "cpu", "FRAME", 0, -1),
        ("aten::linear", "thread 1", "cpu", "OP", 0, -1),
        ("aten::addmm", "thread 1", "cpu", "OP", 0, -1),
        ("aten::addmm", "thread 1", "cpu", "RUNTIME", 0, 100),  # launch points at its op
        ("model.py:27 forward", "thread 1", "cpu", "SYNC", 0, 101),  # the sync call's context
        ("gemm", "stream 7", "cuda:0", "KERNEL", LINKED, 100),
        ("old_kernel", "stream 7", "cuda:0", "KERNEL", 0, 7),
    }
    assert list(tl.start_ns) == sorted(tl.start_ns)


def test_events_in_any_order_give_the_same_profile(tmp_path: Path) -> None:
    a = import_file(write(tmp_path, EAGER, "a.json"))
    b = import_file(write(tmp_path, list(reversed(EAGER)), "b.json"))
    assert tree(a, ("time_ns", "count", "cpu_time_ns", "flops", "alloc_bytes")) == tree(
        b, ("time_ns", "count", "cpu_time_ns", "flops", "alloc_bytes")
    )


def test_comm_memcpy_memset_categories(tmp_path: Path) -> None:
    events = [
        X("cpu_op", "c10d::allreduce_", 0, 50),
        runtime("cudaLaunchKernel", 1, 2, corr=1),
        runtime("cudaMemcpyAsync", 4, 2, corr=2),
        runtime("cudaMemsetAsync", 7, 2, corr=3),
        kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 10, 5, corr=1),
        kernel("Memcpy DtoH (Device -> Pageable)", 20, 1, corr=2, cat="gpu_memcpy"),
        kernel("Memset (Device)", 30, 1, corr=3, cat="gpu_memset"),
    ]
    tl = import_file(write(tmp_path, events)).timeline
    assert tl is not None
    device_rows = sorted(
        int(c) for c, t in zip(tl.category, tl.track, strict=True) if tl.tracks[int(t)].kind == "stream"
    )
    assert device_rows == sorted([Category.COMM, Category.MEMCPY, Category.MEMSET])


# --- backward -------------------------------------------------------------------
def test_backward_ops_are_rehomed_under_their_forward_context(tmp_path: Path) -> None:
    # given a forward op with sequence number 7 under a user line, and its backward on the autograd thread
    events = [
        X("python_function", "model.py(5): forward", 0, 50),
        X("cpu_op", "aten::mm", 10, 20, Sequence_number=7, Fwd_thread_id=0),
        X(
            "cpu_op",
            "autograd::engine::evaluate_function: MmBackward0",
            100,
            40,
            tid=2,
            Sequence_number=7,
            Fwd_thread_id=1,
        ),
        X("cpu_op", "MmBackward0", 101, 38, tid=2, Sequence_number=7, Fwd_thread_id=1),
        X("cpu_op", "aten::mm", 102, 30, tid=2),
        runtime("cudaLaunchKernel", 103, 2, corr=9, tid=2),
        kernel("gemm_bwd", 110, 10, corr=9),
        X("cpu_op", "autograd::engine::evaluate_function: Orphan", 200, 10, tid=2, Sequence_number=99, Fwd_thread_id=1),
    ]
    p = import_file(write(tmp_path, events))
    p.check()
    assert tree(p, ("time_ns",)) == (
        "<root>",
        {},
        [
            ("[backward without a forward op]", {}, [("[backward]", {}, [("Orphan", {}, [])])]),
            ("model.py:5 forward", {}, [
                ("[backward]", {}, [
                    # `evaluate_function: MmBackward0` and the MmBackward0 op inside it are one autograd node
                    ("MmBackward0", {}, [("aten::mm", {}, [("gemm_bwd", {"time_ns": 10000.0}, [])])]),
                ]),
                ("aten::mm", {}, []),
            ]),
        ],
    )  # fmt: skip
    assert p.metadata["import_warnings"] == {"backward ops without a matching forward op": 1}


def test_a_backward_op_whose_forward_was_dropped_goes_where_its_neighbours_ran(tmp_path: Path) -> None:
    # given a sampled trace: forward ops 10 and 12 of one module are kept, op 11 between them was dropped
    fwd = {"tid": 1, "Fwd_thread_id": 0}
    bwd = {"tid": 2, "Fwd_thread_id": 1}
    events = [
        X("python_function", "model.py(5): forward", 0, 100),
        X("python_function", "nn.Module: Block_0", 5, 60),
        X("cpu_op", "aten::mm", 10, 10, Sequence_number=10, **fwd),
        X("cpu_op", "aten::gelu", 30, 10, Sequence_number=12, **fwd),
        X("cpu_op", "aten::add", 70, 10, Sequence_number=13, **fwd),
        X("cpu_op", "autograd::engine::evaluate_function: AddBackward0", 200, 10, Sequence_number=11, **bwd),
        X("cpu_op", "autograd::engine::evaluate_function: MulBackward0", 220, 10, Sequence_number=14, **bwd),
    ]
    p = import_file(write(tmp_path, events))
    paths = {p.frame_of(n).name: [f.label() for f in p.path(n)] for n in range(1, len(p))}
    # then op 11 ran between ops 10 and 12, both inside Block_0: its backward goes there
    assert paths["AddBackward0"] == ["model.py:5 forward", "Block_0 (Block)", "[backward]", "AddBackward0"]
    # and op 14 comes after every kept forward op: nothing brackets it, it stays unmatched
    assert paths["MulBackward0"][0] == "[backward without a forward op]"
    assert p.metadata["import_warnings"] == {
        "backward ops whose forward op is not in the trace, placed by the forward ops around it": 1,
        "backward ops without a matching forward op": 1,
    }


def test_an_event_ending_after_its_parent_is_clipped_not_unnested(tmp_path: Path) -> None:
    events = [
        X("python_function", "main.py(1): run", 0, 100),
        X("cpu_op", "aten::a", 10, 90.002),  # ends 2 ns after its parent
        X("cpu_op", "aten::b", 50, 10),
    ]
    p = import_file(write(tmp_path, events))
    assert tree(p, ("count",)) == (
        "<root>",
        {},
        [("main.py:1 run", {"count": 1.0}, [("aten::a", {"count": 1.0}, [("aten::b", {"count": 1.0}, [])])])],
    )
    assert p.metadata["import_warnings"] == {"host events ending after their parent (clipped to it)": 1}


# --- vintages -------------------------------------------------------------------
def test_legacy_categories_integer_timestamps_and_hip_names(tmp_path: Path) -> None:
    events = [
        X("Operator", "aten::conv2d", 1000, 100),
        runtime("hipExtModuleLaunchKernel", 1010, 5, corr=3, cat="Runtime"),
        runtime("hipDeviceSynchronize", 1050, 5, corr=4, cat="hip_runtime"),
        kernel("Cijk_Alik_Bljk", 1100, 20, corr=3, cat="Kernel"),
    ]
    p = import_file(write(tmp_path, events, displayTimeUnit="ns"))
    assert tree(p) == (
        "<root>",
        {},
        [("aten::conv2d", {"count": 1.0}, [("Cijk_Alik_Bljk", {"time_ns": 20_000.0, "count": 1.0}, [])])],
    )
    tl = p.timeline
    assert tl is not None
    assert Category.SYNC in set(tl.category.tolist())


def test_fractional_microseconds_round_to_ns(tmp_path: Path) -> None:
    events = [X("cpu_op", "aten::add", 1419116104994.671, 5.7404), runtime("cudaLaunchKernel", 1419116104995.0, 1, 1)]
    events.append(kernel("k", 1419116105000.0006, 0.0014, corr=1))
    p = import_file(write(tmp_path, events))
    k = next(n for n in range(len(p)) if p.frame_of(n).kind is FrameKind.KERNEL)
    assert p.exclusive("time_ns")[k] == 1.0
    tl = p.timeline
    assert tl is not None
    assert int(tl.start_ns[0]) == 1419116104994671


def test_cpu_only_trace_puts_op_self_time_in_time_ns(tmp_path: Path) -> None:
    events = [X("cpu_op", "aten::linear", 0, 10), X("cpu_op", "aten::addmm", 2, 6)]
    p = import_file(write(tmp_path, events))
    assert tree(p, ("time_ns",)) == (
        "<root>",
        {},
        [("aten::linear", {"time_ns": 4000.0}, [("aten::addmm", {"time_ns": 6000.0}, [])])],
    )


def test_regions_and_triton_launch_ops(tmp_path: Path) -> None:
    events = [
        X("cpu_op", "Torch-Compiled Region: 0/1", 0, 100),
        X("cpu_op", "## Call CompiledFxGraph fabc ##", 1, 90),
        X("cpu_op", "triton_poi_fused_add_0", 2, 10, kernel_file="/tmp/x.py", kernel_hash="abc"),
        runtime("cuLaunchKernel", 3, 2, corr=5, cat="cuda_driver"),
        kernel("triton_poi_fused_add_0", 20, 3, corr=5),
    ]
    p = import_file(write(tmp_path, events))
    assert tree(p, ("time_ns",)) == (
        "<root>",
        {},
        [
            # the region is named after what was compiled (nothing to name it by here); the graph call inside
            # it is a runtime wrapper, folded (attribute.structure)
            ("<torch.compile>", {}, [
                ("<triton_poi_fused_add_0>", {}, [("triton_poi_fused_add_0", {"time_ns": 3000.0}, [])]),
            ]),
        ],
    )  # fmt: skip
    assert p.metadata["triton_kernel_files"] == {"triton_poi_fused_add_0": "/tmp/x.py"}


def test_metadata(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        EAGER,
        "t.json.gz",
        deviceProperties=[{"id": 0, "name": "H100"}],
        distributedInfo={"rank": 3, "world_size": 8},
        baseTimeNanoseconds=5,
    )
    meta = import_file(path).metadata
    assert meta["source"]["format"] == "kineto"
    assert meta["source"]["path"] == path
    assert (meta["rank"], meta["world_size"], meta["schemaVersion"], meta["baseTimeNanoseconds"]) == (3, 8, 1, 5)
    assert meta["devices"] == [{"id": "cuda:0", "type": "cuda", "index": 0, "name": "H100"}]  # the one device shape
    assert meta["trace_start_ns"] == 0


# --- streaming reader -------------------------------------------------------------
LAYOUTS = {
    "pretty": lambda ev: json.dumps(
        {"schemaVersion": 1, "traceEvents": ev, "deviceProperties": [{"a": 1}, {"b": 2}]}, indent=2
    ),
    "compact": lambda ev: json.dumps({"traceEvents": ev, "x": [{"c": [1]}]}, separators=(",", ":")),
    "events-last": lambda ev: json.dumps({"distributedInfo": {"rank": 1}, "traceEvents": ev}),
    "array": lambda ev: json.dumps(ev),
    "kineto-style": lambda ev: (
        '{\n  "schemaVersion": 1,\n  "traceEvents": [\n'
        + ",\n".join("  " + json.dumps(e) for e in ev)
        + '\n],\n  "traceName": "x.json"\n}'
    ),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("chunk", [7, 64, 1 << 20])
def test_reader_splits_any_layout_at_any_chunk_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: str, chunk: int
) -> None:
    # given the same events laid out differently, read in chunks smaller than one event
    path = tmp_path / "t.json"
    path.write_text(LAYOUTS[layout](EAGER))
    expected = tree(import_file(write(tmp_path, EAGER, "ref.json")), ("time_ns", "count", "alloc_bytes", "flops"))
    monkeypatch.setattr(reader_mod, "CHUNK", chunk)
    # when imported, then the profile is the same
    assert tree(import_file(str(path)), ("time_ns", "count", "alloc_bytes", "flops")) == expected


def test_a_trace_without_events_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match="the trace has no events"):
        import_file(write(tmp_path, []))


def test_odd_values_are_tolerated_and_counted(tmp_path: Path) -> None:
    events = [
        X("cpu_op", "aten::add", 0, -0.001),  # negative rounding duration
        X("cpu_op", "aten::mul", "soon", 1),  # wrong type
        X("cpu_op", "aten::sub", 10**30, 1),  # huge integer
        {"ph": "X", "cat": "cpu_op", "name": "aten::div", "pid": 1, "tid": 1, "ts": 5, "dur": 1, "args": "oops"},
        X("mystery", "x", 0, 1),
    ]
    p = import_file(write(tmp_path, events))
    p.check()
    assert p.metadata["import_warnings"] == {
        "events of unknown category 'mystery' skipped": 1,
        "events with a missing or invalid ts/dur": 2,
        "events with non-object args": 1,
        "negative durations clamped to 0": 1,
    }
    assert sorted(f.name for f in p.frames[1:]) == ["aten::add", "aten::div"]


def test_invalid_utf8_is_replaced_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    data = json.dumps({"traceEvents": [X("cpu_op", "aten::NAME", 0, 1)]}).encode().replace(b"NAME", b"n\xff\xfe")
    path.write_bytes(data)
    p = import_file(str(path))
    assert [f.name for f in p.frames[1:]] == ["aten::n\ufffd\ufffd"]
    assert p.metadata["import_warnings"] == {"invalid UTF-8 replaced": 1}


def test_sniffing_picks_kineto(tmp_path: Path) -> None:
    assert find_importer(write(tmp_path, EAGER, "t.json.gz")).name == "kineto"


# --- real traces ------------------------------------------------------------------
ALL_TRACES = sorted(TRACES.glob("*.json.gz")) if TRACES.is_dir() else []


def _real(name: str) -> Path:
    path = TRACES / name
    if not path.exists():
        pytest.skip(f"{path} not available")
    return path


def _kernel_totals(p: Profile) -> dict[str, list[float]]:
    out: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    t, c = p.exclusive("time_ns"), p.exclusive("count")
    for n in range(len(p)):
        f = p.frame_of(n)
        if f.kind is FrameKind.KERNEL:
            out[f.name][0] += float(t[n])
            out[f.name][1] += float(c[n])
    return out


@pytest.mark.traces
@pytest.mark.parametrize("path", ALL_TRACES, ids=lambda p: p.name)
def test_every_real_trace_imports(path: Path) -> None:
    p = import_file(str(path))
    p.check()
    assert p.timeline is not None and len(p.timeline) > 0
    assert p.total("time_ns") > 0


@pytest.mark.traces
def test_owlv2_facts() -> None:
    p = import_file(str(_real("tracelens_h100_owlv2_inference_modules_memory.json.gz")))
    kinds = {k: 0 for k in FrameKind}
    for f in p.frame.tolist():
        kinds[p.frames[f].kind] += 1
    assert p.metadata["source"]["events"] == 132152
    assert kinds[FrameKind.MODULE] > 100 and kinds[FrameKind.PYTHON] > 100
    assert sum(c for _t, c in _kernel_totals(p).values()) == 4330 + 750 + 85  # kernels + memsets + memcpys
    assert p.total("alloc_bytes") > 0
    assert p.total("flops") > 0
    tl = p.timeline
    assert tl is not None
    # 80 cudaStreamSynchronize + 2 cudaDeviceSynchronize
    assert int(np.count_nonzero(tl.category == Category.SYNC)) == 82
    assert p.metadata["devices"][0]["name"] == "NVIDIA H100 80GB HBM3"


@pytest.mark.traces
def test_owlv2_kernel_totals_match_tracelens() -> None:
    p = import_file(str(_real("tracelens_h100_owlv2_inference_modules_memory.json.gz")))
    ours = _kernel_totals(p)
    ref: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    with open(TRACES / "reference" / "tracelens_h100_owlv2_kernel_summary.csv", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            ref[row["Kernel name"]][0] += float(row["Kernel duration (µs)_sum"]) * 1000
            ref[row["Kernel name"]][1] += int(row["Kernel duration (µs)_count"])
    for name, (total, count) in ref.items():
        assert ours[name][1] == count, name
        assert ours[name][0] == pytest.approx(total, rel=1e-6), name


@pytest.mark.traces
def test_mi300_training_has_backward_under_forward_context() -> None:
    p = import_file(str(_real("tracelens_mi300_ddp_resnet_actckpt_train_rank0.json.gz")))
    rehomed = [n for n in range(len(p)) if p.frame_of(n).kind is FrameKind.BACKWARD and p.parent[n] != 0]
    assert len(rehomed) > 50
    # gradient accumulation (DDP's reducer) has no forward op: a labelled frame, never loose at the root
    sync = [n for n in rehomed if p.frame_of(int(p.parent[n])).name == "backward without a forward op"]
    assert len(sync) == 1
    assert {p.frame_of(c).name for c in p.children[sync[0]]} == {"torch::autograd::AccumulateGrad"}
    under_modules = [n for n in rehomed if p.frame_of(int(p.parent[n])).kind in (FrameKind.MODULE, FrameKind.PYTHON)]
    assert len(under_modules) == len(rehomed) - 1
    assert p.metadata["rank"] == 0 and p.metadata["world_size"] == 8
    assert any(p.frame_of(n).name.startswith("ncclDevKernel") for n in range(len(p)))


@pytest.mark.traces
def test_compiled_traces_have_regions() -> None:
    for name in ("tracelens_b200_vllm_tp8_rank0_compiled_nccl.json.gz", "hta_a100_triton_example.json.gz"):
        p = import_file(str(_real(name)))
        assert any(f.kind is FrameKind.REGION for f in p.frames), name
    p = import_file(str(_real("tracelens_mi300_xdit_sd35_torch_compile_triton.json.gz")))
    assert len(p.metadata["triton_kernel_files"]) > 10


def _fingerprint(profile: Profile) -> tuple[Any, ...]:
    tl = profile.timeline
    assert tl is not None
    cols = tuple(np.asarray(c).tobytes() for c in tl.columns().values())
    paths = tuple(tuple(profile.path(i)) for i in range(len(profile)))
    metrics = tuple((m, profile.exclusive(m).tobytes()) for m in profile.metric_names)
    return cols, tl.tracks, paths, metrics, profile.metadata.get("import_warnings")


@pytest.mark.parametrize(
    "name",
    ["tracelens_mi300_ddp_resnet_actckpt_train_rank0.json.gz", "hta_128rank_sampled_rank-0.json.gz"],
)
def test_spilled_runs_give_exactly_the_in_memory_profile(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tiny runs and windows (host events and timeline rows on disk, merged back) change nothing."""
    from kernelscope.attribute import spill

    path = TRACES / name
    if not path.exists():
        pytest.skip("../shared/traces not present")
    in_memory = import_file(str(path))
    monkeypatch.setattr(spill, "RUN_ROWS", 997)
    monkeypatch.setattr(spill, "WINDOW_ROWS", 61)
    monkeypatch.setattr(spill, "MIN_STEP", 1)
    spilled = import_file(str(path))
    assert _fingerprint(spilled) == _fingerprint(in_memory)


def test_spilled_import_leaves_no_temporary_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kernelscope.attribute import spill

    monkeypatch.setattr(spill, "RUN_ROWS", 50)
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    trace = tmp_path / "t.json"
    events = []
    for i in range(300):
        events.append({"ph": "X", "cat": "cpu_op", "name": f"aten::op{i % 3}", "pid": 1, "tid": 1, "ts": i * 10.0,
                       "dur": 5.0, "args": {"External id": i}})  # fmt: skip
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                       "ts": i * 10.0 + 1, "dur": 2.0, "args": {"correlation": i}})  # fmt: skip
        events.append({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": i * 10.0 + 3, "dur": 1.0,
                       "args": {"device": 0, "stream": 7, "correlation": i}})  # fmt: skip
    trace.write_text(json.dumps({"traceEvents": events}))
    profile = import_file(str(trace))
    assert profile.timeline is not None and len(profile.timeline) == 900
    assert int(profile.timeline.start_ns.min()) == 0
    assert list((tmp_path / "tmp").iterdir()) == []


def test_spilled_device_join_matches_in_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sort-merge join on disk: device events out of file order, a correlation launched twice (the
    first launch wins), a launch outside every op (External-id fallback), one launched before the trace."""
    from kernelscope.attribute import spill

    events: list[dict[str, object]] = []
    for i in range(40):
        events.append({"ph": "X", "cat": "cpu_op", "name": f"aten::op{i % 4}", "pid": 1, "tid": 1, "ts": i * 10.0,
                       "dur": 5.0, "args": {"External id": 1000 + i}})  # fmt: skip
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                       "ts": i * 10.0 + 1, "dur": 2.0, "args": {"correlation": 2 * i}})  # fmt: skip
    # outside every op on its thread: falls back to the op with External id 1007
    events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": 3.0,
                   "dur": 1.0, "args": {"correlation": 501, "External id": 1007}})  # fmt: skip
    # a second launch of correlation 4, later: the first one is the context
    events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 3, "ts": 500.0,
                   "dur": 1.0, "args": {"correlation": 4}})  # fmt: skip
    for j, corr in enumerate([501, 78, 4, 999, 0, 40, 4, *range(2, 70, 2)]):
        events.append({"ph": "X", "cat": "kernel", "name": f"k{corr % 3}", "pid": 0, "tid": 7 + j % 2,
                       "ts": 1000.0 - j, "dur": 1.0, "args": {"device": 0, "stream": 7 + j % 2,
                                                               "correlation": corr}})  # fmt: skip
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"traceEvents": events}))
    in_memory = import_file(str(trace))
    monkeypatch.setattr(spill, "RUN_ROWS", 3)
    monkeypatch.setattr(spill, "WINDOW_ROWS", 2)
    monkeypatch.setattr(spill, "MIN_STEP", 1)
    spilled = import_file(str(trace))
    assert _fingerprint(spilled) == _fingerprint(in_memory)
    assert spilled.metadata["import_warnings"] == {"device events whose launch is not in the trace": 1}
    paths = {"/".join(f.name for f in spilled.path(n)) for n in range(1, len(spilled))}
    assert "aten::op3/k0" in paths  # correlation 501 -> External id 1007 -> aten::op3
    assert "launched before trace/k0" in paths  # correlation 999
