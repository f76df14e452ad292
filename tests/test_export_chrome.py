"""``export --format chrome``: the trace's shape, and re-import with the same per-kernel and per-op totals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kernelscope.analysis.views import group
from kernelscope.importers import import_file
from kernelscope.inputs import open_profile
from kernelscope.model import Category, Frame, Profile, ProfileBuilder, TimelineBuilder
from kernelscope.render.exporters import find_exporter


def timed_profile() -> Profile:
    """A forward line with two ops; each op's runtime call launches one kernel on stream 7."""
    b = ProfileBuilder()
    tl = TimelineBuilder()
    thread = tl.track("thread 11", "cpu", "thread")
    stream = tl.track("stream 7", "cuda:0", "stream")
    line = b.path([Frame.python("train.py", 3, "forward")])
    for i, (op_name, kernel, start) in enumerate([("aten::mm", "gemm", 1_000), ("aten::add", "add</script>", 5_000)]):
        op = b.child(line, Frame.op(op_name))
        k = b.child(op, Frame.kernel(kernel, "cuda:0", 7))
        b.add_many(op, {"cpu_time_ns": 3_000, "count": 1})
        b.add_many(k, {"time_ns": 2_000 + i, "count": 1})
        tl.add(op, thread, start, 3_000, Category.OP)
        tl.add(op, thread, start + 1_000, 500, Category.RUNTIME, correlation=100 + i)
        tl.add(k, stream, start + 2_000, 2_000 + i, Category.KERNEL, flags=1, correlation=100 + i)
    return b.build({"name": "timed"}, tl.build())


def export(profile: Profile, tmp_path: Path) -> tuple[Path, list[dict[str, Any]]]:
    path = tmp_path / "p.trace.json"
    find_exporter("chrome").write(profile, path)
    return path, json.loads(path.read_text())["traceEvents"]


METRICS = ("time_ns", "cpu_time_ns", "count")


def totals(profile: Profile, by: str) -> dict[str | None, dict[str, float]]:
    return {k: v for k, v in group(profile, by, ["time_ns"]).rows if k is not None}


def test_events_per_thread_and_stream_with_names_flows_and_stacks(tmp_path: Path) -> None:
    _, events = export(timed_profile(), tmp_path)
    names = {(e["name"], e["args"]["name"]) for e in events if e["ph"] == "M" and "name" in e["args"]}
    assert {("process_name", "cpu"), ("process_name", "cuda:0"), ("thread_name", "thread 11")} <= names
    assert ("thread_name", "stream 7") in names
    x = [e for e in events if e["ph"] == "X"]
    ops = [e for e in x if e["cat"] == "cpu_op"]
    kernels = [e for e in x if e["cat"] == "kernel"]
    assert [e["name"] for e in ops] == ["aten::mm", "aten::add"] and {e["tid"] for e in ops} == {11}
    assert [(e["name"], e["pid"], e["tid"], e["ts"], e["dur"]) for e in kernels] == [
        ("gemm", 0, 7, 3, 2),
        ("add</script>", 0, 7, 7, 2.001),
    ]
    assert kernels[0]["args"]["stack"] == ["train.py:3 forward", "aten::mm", "gemm"]
    flows = sorted((e["id"], e["ph"]) for e in events if e["ph"] in "sf")
    assert flows == [(100, "f"), (100, "s"), (101, "f"), (101, "s")]


def test_reimport_gives_the_same_per_kernel_and_per_op_totals(tmp_path: Path) -> None:
    profile = timed_profile()
    path, _ = export(profile, tmp_path)
    back = import_file(str(path))
    for by in ("kernel", "op"):
        assert totals(back, by) == totals(profile, by)


def test_python_lines_say_what_they_are_after_a_round_trip(tmp_path: Path) -> None:
    # a live run's Python frames are the lines that ran, an import's name functions (def lines); its exported trace
    # says which, so that diff reads it back right
    b = ProfileBuilder()
    op = b.path([Frame.python("train.py", 3, "main"), Frame.python("model.py", 12, "forward"), Frame.op("aten::mm")])
    b.add_many(op, {"cpu_time_ns": 3_000, "time_ns": 3_000, "count": 1})
    live = b.build({})  # (no timeline: laid out as calls, its lines as python_function events)
    back = import_file(str(export(live, tmp_path)[0]))
    assert any(f.kind.value == "python" for f in back.frames) and "python_lines" not in back.metadata
    (tmp_path / "t").mkdir()
    traced = live.replace(metadata={**live.metadata, "python_lines": "def"})
    assert import_file(str(export(traced, tmp_path / "t")[0])).metadata["python_lines"] == "def"


def test_profile_without_timeline_is_laid_out_and_keeps_kernel_time(tmp_path: Path) -> None:
    profile = timed_profile().replace(timeline=None)
    path, events = export(profile, tmp_path)
    line = next(e for e in events if e.get("name") == "train.py(3): forward")  # (as Kineto names it)
    assert line["dur"] == 6  # its inclusive host time (cpu_time_ns), in microseconds
    back = import_file(str(path))
    assert totals(back, "kernel") == totals(profile, "kernel")


@pytest.mark.traces
@pytest.mark.parametrize(
    "name",
    [
        "hta_a100_alexnet_cuda_sync.json.gz",
        "hta_a100_triton_example.json.gz",
        "hta_128rank_sampled_rank-0.json.gz",
        "tracelens_b200_vllm_tp8_rank0_compiled_nccl.json.gz",
        "tracelens_mi300_jax_te_fused_attn_train.xplane.pb",
    ],
)
def test_real_trace_round_trips(shared_traces: Path, tmp_path: Path, name: str) -> None:
    """Every interval the import kept (ops, user lines, modules, scopes, steps, regions, runtime calls, device
    work) comes back: the totals of every metric, and the per-kernel and per-op times."""
    profile = open_profile(str(shared_traces / name))
    path, events = export(profile, tmp_path)
    assert sum(1 for e in events if e["ph"] == "X") == len(profile.timeline or [])
    back = import_file(str(path))
    # (an xplane's kernels sit under HLO ops, which are no host events: a trace gives them no op)
    for by in ("kernel",) if name.endswith(".pb") else ("kernel", "op"):
        assert totals(back, by) == totals(profile, by)
    assert {m: back.total(m) for m in METRICS} == {m: profile.total(m) for m in METRICS}


def test_a_live_gpu_profile_with_device_rows_only_is_laid_out(tmp_path: Path) -> None:
    """A live run keeps its device rows in the timeline, not its host's: it is laid out as calls, exactly."""
    profile = timed_profile()
    tl = profile.timeline
    assert tl is not None
    live = profile.replace(timeline=tl.select(tl.category == int(Category.KERNEL)))
    back = import_file(str(export(live, tmp_path)[0]))
    assert {m: back.total(m) for m in METRICS} == {m: live.total(m) for m in METRICS}
    for by in ("kernel", "op"):
        assert totals(back, by) == totals(live, by)


def test_an_import_with_folded_frames_round_trips(tmp_path: Path) -> None:
    """An import's folded frames (DDP's forward scope, the graph call in a compiled region) leave no interval of
    their own behind: exported, they came back as a second call of the frame that took their place; a region named
    after what was compiled is written under torch's name, so the import names it the same way again."""
    from test_import_kineto import X, kernel, runtime, write

    events = [
        X("user_annotation", "## forward ##", 0, 200),
        X("user_annotation", "DistributedDataParallel.forward", 5, 190),
        X("cpu_op", "Torch-Compiled Region: 0/1", 10, 100),
        X("cpu_op", "## Call CompiledFxGraph fabc ##", 11, 90),
        X("cpu_op", "triton_poi_fused_add_0", 12, 10, kernel_file="/tmp/x.py", kernel_hash="abc"),
        runtime("cuLaunchKernel", 13, 2, corr=5, cat="cuda_driver"),
        kernel("triton_poi_fused_add_0", 30, 3, corr=5),
        X("cpu_op", "aten::mm", 150, 20),
    ]
    profile = import_file(write(tmp_path, events))
    labels = {profile.frame_of(i).label() for i in range(1, len(profile))}
    assert "[DistributedDataParallel.forward]" not in labels and "<torch.compile>" in labels
    back = import_file(str(export(profile, tmp_path)[0]))
    assert {m: back.total(m) for m in METRICS} == {m: profile.total(m) for m in METRICS}

    def calls(p: Profile) -> dict[str, float]:
        count = p.exclusive("count")
        out: dict[str, float] = {}
        for i in range(1, len(p)):
            out[p.frame_of(i).label()] = out.get(p.frame_of(i).label(), 0.0) + float(count[i])
        return out

    assert calls(back) == calls(profile)
    assert calls(profile)["[## forward ##]"] == 1
