"""Advisor: data sources (Python self time), roofline, misaligned GEMMs and unfused attention.

Literal profiles per rule; the live tree's Python self time from literal events; real inputs: a
chrome trace of a generator-fed loop recorded here, and the GPU traces in ../shared/traces.
"""

from __future__ import annotations

import enum
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from conftest import REPO, build, env_without_color
from kernelscope.analysis.advisor import Finding, Severity, run_rules
from kernelscope.analysis.advisor._devices import device_peak, kernel_dtype
from kernelscope.analysis.advisor.efficiency import misalignment
from kernelscope.cli.main import main
from kernelscope.inputs import open_profile
from kernelscope.model import Frame, Profile

CPU = {"source": {"format": "torch-live"}, "device_run": False}
H100 = {"source": {"format": "kineto"}, "deviceProperties": [{"name": "NVIDIA H100 80GB HBM3", "computeMajor": 9}]}


def _only(profile: Profile, rule: str, **thresholds: float) -> list[Finding]:
    return [f for f in run_rules(profile, only={rule}, thresholds=thresholds or None)]


# --- data_source ------------------------------------------------------------------------------------
def _source_profile(py_ns: float, meta: dict[str, Any] = CPU) -> Profile:
    return build(
        [
            ([Frame.python("t.py", 7, "main")], {"cpu_time_ns": py_ns}),  # the loop line pulling items
            (
                [Frame.python("t.py", 7, "main"), Frame.python("t.py", 3, "batches"), Frame.op("aten::full")],
                {"cpu_time_ns": 1e5, "time_ns": 1e5, "count": 3},
            ),
            (
                [Frame.python("t.py", 8, "main"), Frame.op("aten::mm")],
                {"cpu_time_ns": 40e6, "time_ns": 40e6, "count": 3},
            ),
            ([Frame.python("t.py", 8, "main")], {"cpu_time_ns": 2e6}),  # Python around the step's ops
        ],
        meta,
    )


def test_data_source_is_the_line_whose_own_python_work_is_slower_than_the_step() -> None:
    (f,) = _only(_source_profile(60e6), "data_source")
    assert (f.file, f.line, f.severity, f.estimated_saving_ms) == ("t.py", 7, Severity.WARNING, 60.0)
    assert "the rest of the enclosing code took" in f.evidence and f.saving_method and f.fix
    # a line mostly in ops (line 8: 2 ms of Python around 40 ms of ops) is not a data source
    assert _only(_source_profile(0.5e6), "data_source") == []
    assert _only(_source_profile(60e6), "data_source", **{"data_source.min_pct": 80.0}) == []
    (info,) = _only(_source_profile(3e6), "data_source")
    assert info.severity is Severity.INFO  # ~7% of the host time: below warn_pct


def test_data_source_in_a_trace_is_one_finding_per_function() -> None:
    """Traces name a generator by its def line on the first call and its yield line on resumes."""
    trace = {"source": {"format": "kineto"}}
    p = build(
        [
            ([Frame.python("t.py", 10, "main"), Frame.python("t.py", 3, "batches")], {"cpu_time_ns": 20e6}),
            ([Frame.python("t.py", 10, "main"), Frame.python("t.py", 6, "batches")], {"cpu_time_ns": 40e6}),
            ([Frame.python("t.py", 10, "main"), Frame.op("aten::mm")], {"cpu_time_ns": 30e6, "count": 3}),
        ],
        trace,
    )
    (f,) = _only(p, "data_source")
    assert (f.line, f.estimated_saving_ms) == (3, 60.0) and "batches's own code" in f.evidence


class _Tag(enum.Enum):
    PyCall = 0
    TorchOp = 1


def _site(file: str, line: int, fn: str) -> SimpleNamespace:
    return SimpleNamespace(file_name=file, line_number=line, function_name=fn)


def _call(caller: SimpleNamespace, callee: SimpleNamespace, start: int, dur: int, kids: list[Any]) -> SimpleNamespace:
    fields = SimpleNamespace(caller=caller, callsite=callee, module=None)
    return SimpleNamespace(
        tag=_Tag.PyCall, children=kids, start_time_ns=start, duration_time_ns=dur, start_tid=1, extra_fields=fields
    )


def test_a_live_window_gives_the_loop_line_the_generators_own_time(tmp_path: Path) -> None:
    """PyTorch's event tree, as literals: the generator's __next__ is a call from the loop line; its own
    Python time (less the op it runs) is the loop line's host self time, which data_source reads."""
    import runpy

    from kernelscope.attribute.engine import build_profile
    from kernelscope.attribute.tables import EventTables
    from kernelscope.collect.torch_events import TorchEvents

    user = str(tmp_path / "train.py")
    Path(user).write_text("# a user file: the frame classifier wants it to exist\n")
    op = SimpleNamespace(
        tag=_Tag.TorchOp,
        name="aten::full",
        children=[],
        start_time_ns=2_000,
        duration_time_ns=200,
        start_tid=1,
        correlation_id=0,
        extra_fields=SimpleNamespace(scope=SimpleNamespace(name="FUNCTION"), sequence_number=-1, inputs=[]),
    )
    gen = _call(_site(user, 7, "main"), _site(user, 2, "batches"), 1_000, 5_000, [op])
    root = _call(_site(runpy.__file__, 88, "_run_code"), _site(user, 5, "main"), 0, 9_000, [gen])
    warnings: Counter[str] = Counter()
    tables = EventTables(warnings)
    TorchEvents(tables, lambda ptr: None).add([root], shapes=False, cuda=False)
    p = build_profile(tables, CPU, warnings)
    cpu = {
        tuple((f.kind.value, f.line, f.name) for f in p.path(n)): v for n, v in enumerate(p.exclusive("cpu_time_ns"))
    }
    assert cpu[(("python", 7, "main"),)] == 4_800.0  # 5 µs in the generator call less its 0.2 µs op
    assert cpu[(("python", 7, "main"), ("python", 2, "batches"), ("op", 0, "aten::full"))] == 200.0
    (f,) = _only(p, "data_source")
    assert (f.line, f.estimated_saving_ms) == (7, 0.005) and "no ops: a data source" in f.title


@pytest.mark.slow
def test_data_source_fires_on_an_imported_chrome_trace_with_python_stacks(tmp_path: Path) -> None:
    """torch.profiler(with_stack=True) → export_chrome_trace → analyze: the generator is named."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    def batches(n: int) -> Any:
        for item in range(n):
            acc = 0
            for j in range(300_000):
                acc += (j * item) % 7
            yield torch.full((64, 64), float(acc % 3))

    w = torch.randn(64, 64)
    with profile(activities=[ProfilerActivity.CPU], with_stack=True) as prof:
        for batch in batches(3):
            (batch @ w).relu().sum()
    trace = tmp_path / "loop.json"
    prof.export_chrome_trace(str(trace))
    (f,) = _only(open_profile(str(trace)), "data_source")
    assert f.file is not None and f.file.endswith("test_advisor_efficiency.py")
    assert "batches" in f.evidence and f.severity is Severity.WARNING


# --- roofline ---------------------------------------------------------------------------------------
def _gemm(kernel: str, time_ns: float, flops: float, nbytes: float, meta: dict[str, Any] = H100) -> Profile:
    op = [Frame.python("m.py", 5, "f"), Frame.op("aten::bmm")]
    return build(
        [
            (op, {"flops": flops, "bytes": nbytes, "count": 10}),
            ([*op, Frame.kernel(kernel, "cuda:0", 7)], {"time_ns": time_ns, "count": 10}),
            (
                [Frame.python("m.py", 9, "f"), Frame.op("aten::add"), Frame.kernel("add", "cuda:0", 7)],
                {"time_ns": 1e6, "count": 10},
            ),
        ],
        meta,
    )


def test_roofline_flags_a_hot_op_far_below_its_roof() -> None:
    # 100 TFLOP in 1 s on bf16 kernels: 10% of the H100's 989 TFLOP/s; bound 0.101 s
    (f,) = _only(_gemm("sm90_xmma_gemm_bf16bf16_bf16f32", 1e9, 1e14, 1e9), "roofline")
    assert (f.line, f.severity) == (5, Severity.WARNING) and "10% of the H100 SXM roofline" in f.title
    assert f.estimated_saving_ms == pytest.approx(1000.0 - 101.1 / 0.7, abs=0.1)
    assert "compute-bound" in f.evidence and "989 TFLOP/s (bf16)" in f.evidence
    # without an element type in the names the fp32 roof (67 TFLOP/s) applies: 100 TFLOP/s is above it
    assert _only(_gemm("gemm_kernel", 1e9, 1e14, 1e9), "roofline") == []
    # memory-bound: 3 TB in 1 s is 90% of 3.35 TB/s
    assert _only(_gemm("gemm_kernel", 1e9, 1e9, 3e12), "roofline") == []


def test_roofline_needs_a_known_device() -> None:
    unknown = {"source": {"format": "kineto"}, "deviceProperties": [{"name": "Mystery GPU"}]}
    assert _only(_gemm("sm90_xmma_gemm_bf16bf16", 1e9, 1e14, 1e9, unknown), "roofline") == []
    assert _only(_gemm("sm90_xmma_gemm_bf16bf16", 1e9, 1e14, 1e9, CPU), "roofline") == []  # CPU runs: skipped


def test_device_table_and_kernel_types() -> None:
    a100 = {"deviceProperties": [{"name": "NVIDIA A100-PG509-200", "totalGlobalMem": 42297524224}]}
    _, peak = device_peak(a100) or ("", None)
    assert peak is not None and (peak.name, peak.bandwidth) == ("A100 40GB", 1.555)
    mi300 = device_peak({"deviceProperties": [{"name": "AMD Instinct MI300X"}]})
    assert mi300 is not None and mi300[1].name == "MI300X"
    assert device_peak({"devices": [{"type": "cpu", "name": "x86_64"}]}) is None
    assert kernel_dtype("cutlass_75_tensorop_bf16_s1688gemm_bf16_256x128_tn_align1") == "bf16"
    assert kernel_dtype("cutlass_80_tensorop_s1688gemm_128x64_32x6_nt_align1") == "tf32"
    assert kernel_dtype("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV") == "bf16"
    assert kernel_dtype("ampere_sgemm_128x64_nn") == "fp32"
    assert kernel_dtype("void at::native::vectorized_elementwise_kernel") is None


# --- misaligned_gemm --------------------------------------------------------------------------------
def test_misaligned_gemm_from_the_kernel_the_library_picked() -> None:
    assert misalignment("cutlass_75_tensorop_bf16_s1688gemm_bf16_256x128_tn_align1") == ("bf16", 1, 8)
    assert misalignment("cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x6_tn_align8") is None
    assert misalignment("sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_alignc4") is None
    (f,) = _only(_gemm("cutlass_75_tensorop_bf16_s1688gemm_bf16_256x128_tn_align1", 4e6, 1e9, 1e6), "misaligned_gemm")
    assert (f.line, f.occurrences, f.estimated_saving_ms, f.severity) == (5, 10, 2.0, Severity.WARNING)
    assert "multiple of 8" in f.evidence and "aten::bmm" in f.title
    assert _only(_gemm("cutlass_80_tensorop_bf16_s16816gemm_bf16_tn_align8", 4e6, 1e9, 1e6), "misaligned_gemm") == []


# --- unfused_attention ------------------------------------------------------------------------------
def _attention(under: list[Frame], softmax_ns: float = 2e6) -> Profile:
    mod = [Frame.module_("layers.0.attn", "SelfAttention"), *under]
    return build(
        [
            ([*mod, Frame.python("a.py", 20, "forward"), Frame.op("aten::matmul")], {"time_ns": 1e6, "count": 4}),
            (
                [*mod, Frame.python("a.py", 21, "forward"), Frame.op("aten::softmax")],
                {"time_ns": softmax_ns, "count": 2},
            ),
            ([*mod, Frame.python("a.py", 22, "forward"), Frame.op("aten::bmm")], {"time_ns": 1e6, "count": 0}),
            (
                [Frame.module_("layers.1.attn", "SelfAttention"), Frame.op("aten::softmax")],
                {"time_ns": 1e6, "count": 2},
            ),
            ([Frame.module_("layers.1.attn", "SelfAttention"), Frame.op("aten::bmm")], {"time_ns": 1e6, "count": 4}),
        ],
        CPU,
    )


def test_unfused_attention_per_module_class() -> None:
    (f,) = _only(_attention([]), "unfused_attention")
    assert (f.module, f.file, f.line, f.occurrences) == ("SelfAttention", "a.py", 21, 4)
    assert f.estimated_saving_ms == 3.0 and "8 batched matmul call(s) and 4 softmax" in f.evidence
    # the same ops inside scaled_dot_product_attention (its math fallback) are not the user's attention
    (rest,) = _only(_attention([Frame.op("aten::scaled_dot_product_attention")]), "unfused_attention")
    assert rest.occurrences == 2  # layers.1 only
    lone = build([([Frame.module_("m", "M"), Frame.op("aten::softmax")], {"time_ns": 1e7, "count": 2})], CPU)
    assert _only(lone, "unfused_attention") == []


# --- real GPU traces (skip without ../shared/traces) ------------------------------------------------
def test_128_rank_trace_has_misaligned_tf32_gemms(shared_traces: Path) -> None:
    findings = _only(open_profile(str(shared_traces / "hta_128rank_sampled_rank-1.json.gz")), "misaligned_gemm")
    assert findings and all("tf32 align1 (full: align4)" in f.evidence for f in findings)


@pytest.mark.slow
def test_owlv2_trace_gets_attention_alignment_and_roofline_findings(
    shared_traces: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["analyze", str(shared_traces / "tracelens_h100_owlv2_inference_modules_memory.json.gz"), "--json"]) == 0
    )
    found = {f["rule"]: f for f in json.loads(capsys.readouterr().out)["findings"]}
    line = ("transformers/models/owlv2/modeling_owlv2.py", 410)
    attention = found["unfused_attention"]
    assert (attention["file"], attention["line"], attention["module"]) == (*line, "Owlv2Attention")
    assert attention["severity"] == "warning" and attention["estimated_saving_ms"] > 200
    misaligned = found["misaligned_gemm"]  # the 5185-token sequence: bmm on [16, 5185, 64] x [16, 64, 5185]
    assert (misaligned["file"], misaligned["line"]) == line and "bf16 align1" in misaligned["evidence"]
    roof = found["roofline"]
    assert "aten::softmax" in roof["title"] and "H100 SXM" in roof["title"]


@pytest.mark.slow
def test_a_clean_run_of_the_bundled_example_has_nothing_above_info(tmp_path: Path) -> None:
    """Live, with Python frames' own time in the tree: no rule may warn on the example."""
    env = env_without_color()
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")])
    example = REPO / "examples" / "tiny_transformer.py"
    cmd = [sys.executable, "-m", "kernelscope", "run", "--max-overhead", "0", "-o", "ex.ksprof", "--no-view"]
    subprocess.run(
        [*cmd, str(example), "--steps", "3"], check=True, env=env, cwd=tmp_path, capture_output=True, timeout=300
    )
    findings = run_rules(open_profile(str(tmp_path / "ex.ksprof")))  # the whole run: a sample would tilt the shares
    assert [f for f in findings if f.severity is not Severity.INFO] == []


SLOW_DATASET = """
import torch
from torch.utils.data import DataLoader, Dataset


class Slow(Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        acc = 0
        for j in range(300_000):
            acc += (j * i) % 7
        return torch.full((8,), float(acc % 3))


def main():
    layer = torch.nn.Linear(8, 8)
    for batch in DataLoader(Slow(), batch_size=2):
        layer(batch).sum().backward()


main()
"""


@pytest.mark.slow
def test_a_pure_python_dataset_counts_in_the_live_data_loading_finding(tmp_path: Path) -> None:
    """The Dataset's __getitem__ is user code called by the DataLoader: its own time is the fetch's."""
    (tmp_path / "slow_dataset.py").write_text(SLOW_DATASET)
    env = env_without_color()
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")])
    cmd = [
        sys.executable,
        "-m",
        "kernelscope",
        "run",
        "--max-overhead",
        "0",
        "-o",
        "d.ksprof",
        "--no-view",
        "slow_dataset.py",
    ]
    subprocess.run(cmd, check=True, env=env, cwd=tmp_path, capture_output=True, timeout=300)
    (f,) = _only(open_profile(str(tmp_path / "d.ksprof")), "data_loading")
    loop_line = next(i for i, text in enumerate(SLOW_DATASET.splitlines(), 1) if "in DataLoader(" in text)
    assert (f.line, f.severity) == (loop_line, Severity.WARNING)
    share = float(f.title.split("took ")[1].split("%")[0])
    assert share >= 50.0  # 300k Python iterations per item against a Linear(8, 8) step
