"""Native sampling (collect/native): py-spy's trace read, put on torch's clock, placed under ops and lines,
and summed by layer. Unit tests build their input from literals; the real runs (slow) sample real programs
and skip when py-spy cannot attach here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO, build, env_without_color
from kernelscope.analysis.views import group
from kernelscope.attribute.userframes import display_path
from kernelscope.collect.native import layers
from kernelscope.collect.native.align import fit_offset, op_names_of
from kernelscope.collect.native.chrome import Segment, StackFrame, segments_of
from kernelscope.collect.native.place import INTERPRETER, MIN_SAMPLES, apply, flatten, place
from kernelscope.model import Frame, FrameKind, ProfileBuilder, load

LIBTORCH = "/site-packages/torch/lib/libtorch_cpu.so"
LIBPY = "/site-packages/torch/lib/libtorch_python.so"


def _b(ts: int, name: str, file: str = "", line: int = 0, tid: int = 7) -> dict[str, object]:
    return {"ph": "B", "ts": ts, "tid": tid, "name": name, "args": {"filename": file, "line": line}}


def _e(ts: int, name: str, tid: int = 7) -> dict[str, object]:
    return {"ph": "E", "ts": ts, "tid": tid, "name": name, "args": {"filename": "", "line": 0}}


# --- reading py-spy's chrometrace --------------------------------------------------------------------


def test_segments_follow_each_change_of_a_threads_stack() -> None:
    # given: three samples of one thread; the second adds a native frame, the third drops it
    events = [
        _b(100, "thread (4242): MainThread"),
        _b(100, "<module>", "/w/train.py", 12),
        _b(100, "at::_ops::mm::call", LIBTORCH),
        _b(300, "mkl_blas_sgemm", LIBTORCH),
        _e(450, "mkl_blas_sgemm"),
        _e(450, "at::_ops::mm::call"),
        _e(600, "<module>"),
        _e(600, "thread (4242): MainThread"),
    ]
    segs = segments_of(events)
    module = StackFrame("<module>", "/w/train.py", 12)
    mm = StackFrame("at::_ops::mm::call", LIBTORCH, 0)
    assert segs == [
        Segment(4242, 100, 300, (module, mm)),
        Segment(4242, 300, 450, (module, mm, StackFrame("mkl_blas_sgemm", LIBTORCH, 0))),
        Segment(4242, 450, 600, (module,)),
    ]


# --- the layer rule ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("frames", "layer"),
    [
        (
            [
                ("THPVariable_mm", LIBPY),
                ("at::_ops::mm::call", LIBTORCH),
                ("mkl_blas_def_sgemm_kernel_0_zen", LIBTORCH),
            ],
            "kernel library: MKL",
        ),
        (
            [("at::_ops::mm::call", LIBTORCH), ("dgemm_kernel_SKYLAKEX", "/x/libscipy_openblas64_-ff651d7f.so")],
            "kernel library: libscipy_openblas64_-ff651d7f.so",
        ),
        ([("at::native::add_kernel", LIBTORCH), ("__memmove_avx_unaligned_erms", "/lib/libc.so.6")], layers.ATEN),
        (
            [("at::_ops::empty::call", LIBTORCH), ("c10::alloc_cpu", "/x/libc10.so"), ("malloc", "/lib/libc.so.6")],
            layers.ALLOCATOR,
        ),
        ([("torch::autograd::Engine::thread_main", LIBTORCH), ("std::mutex::lock", LIBTORCH)], layers.AUTOGRAD),
        ([("THPVariable_add", LIBPY), ("torch::PythonArgParser::raw_parse", LIBPY)], layers.DISPATCH),
        ([("_PyEval_EvalFrameDefault", "/x/libpython3.11.so.1.0")], layers.PYTHON),
        ([("0x7f00deadbeef", "/lib/libc.so.6")], layers.OTHER),
        ([], layers.PYTHON),
    ],
)
def test_one_rule_names_the_layer_from_the_innermost_frame_outwards(frames: list[tuple[str, str]], layer: str) -> None:
    assert layers.sample_layer(frames) == layer


def test_dispatcher_entries_name_their_ops() -> None:
    assert op_names_of(["THPVariable_add", "at::_ops::add_Tensor::call"]) == ("aten::add_Tensor", "aten::add")
    assert "aten::relu_" in op_names_of(["at::_ops::relu_::call"])
    assert op_names_of(["malloc"]) == ()


# --- the clock --------------------------------------------------------------------------------------


def test_the_offset_that_puts_samples_in_the_ops_they_name_is_found() -> None:
    # given: 400 ops of three names and 0.3-2 ms each, back to back on torch's clock from 10^9 ns
    rng = np.random.default_rng(0)
    lengths = rng.integers(300_000, 2_000_000, 400)
    seg_end = (1_000_000_000 + np.cumsum(lengths)).astype(np.int64)
    seg_start = (seg_end - lengths).astype(np.int64)
    seg_name = rng.integers(0, 3, 400).astype(np.int64)
    true_offset = 1_000_000_000 - 5_000_000 + 123_000  # py-spy's µs 0 is at this torch time
    picks = rng.choice(400, 120, replace=False)
    real = seg_start[picks] + lengths[picks] // 2  # samples in the middle of ops, naming them
    names = [(int(seg_name[i]),) for i in picks]
    sample_us = (real - true_offset) // 1000
    got = fit_offset(sample_us, names, seg_start, seg_end, seg_name, true_offset - 20_000_000, true_offset + 10_000_000)
    assert got.matched == len(real)
    assert abs(got.offset_ns - true_offset) <= 150_000  # within the margin the samples leave


# --- placing samples --------------------------------------------------------------------------------


TRAIN = str(REPO / "tests" / "fixtures" / "native_mlp.py")  # (a real file: only those are user code)
LINE = Frame.python(display_path(TRAIN), 12, "<module>")


def _tree() -> tuple[ProfileBuilder, int, int, int]:
    b = ProfileBuilder()
    line = b.child(0, LINE)
    linear = b.child(line, Frame.op("aten::linear"))
    addmm = b.child(linear, Frame.op("aten::addmm"))
    for node, ns in ((linear, 1e6), (addmm, 8e6)):
        b.add(node, "cpu_time_ns", ns)
        b.add(node, "time_ns", ns)
    return b, line, linear, addmm


def test_samples_go_under_the_innermost_op_or_their_line_and_split_its_self_time() -> None:
    b, _line, linear, addmm = _tree()
    # given: linear 0..10 ms with addmm 1..9 ms inside; a window 0..12 ms; py-spy's µs == torch's ns / 1000
    flat = flatten([(0, 10_000_000, linear), (1_000_000, 9_000_000, addmm)], [(0, 12_000_000)])
    module = StackFrame("<module>", TRAIN, 12)
    gemm = StackFrame("mkl_blas_def_sgemm_kernel_0_zen", LIBTORCH, 0)
    segs = [
        Segment(1, 2_000, 6_000, (module, StackFrame("at::_ops::addmm::call", LIBTORCH, 0), gemm)),  # in addmm
        Segment(1, 9_500, 10_000, (module, StackFrame("at::_ops::linear::call", LIBTORCH, 0))),  # in linear only
        Segment(1, 10_500, 11_000, (module,)),  # between ops: the line's interpreter time
        Segment(1, 20_000, 30_000, (module,)),  # outside the window: dropped
    ]
    placed = place(segs, flat, 0, b)
    applied = apply(placed, b, rate=1000, device_run=False)  # 1 ms a sample: addmm has 4, linear 0.5
    p = b.build()
    by_path = {
        tuple(f.label() for f in p.path(n)): (p.exclusive("cpu_time_ns")[n], p.exclusive("time_ns")[n])
        for n in range(1, len(p))
    }
    gemm_path = (LINE.label(), "aten::linear", "aten::addmm", "mkl_blas_def_sgemm_kernel_0_zen (libtorch_cpu.so)")
    assert by_path[gemm_path] == (4e6, 4e6)
    assert by_path[gemm_path[:3]] == (4e6, 4e6)  # self: what no sample saw; the op's total is unchanged
    assert by_path[gemm_path[:2]] == (1e6, 1e6)  # linear: fewer than MIN_SAMPLES samples, left whole
    assert by_path[(LINE.label(), INTERPRETER)] == (0.5e6, 0.0)
    assert applied.split_ops == 1 and applied.thin_ops == 1 and MIN_SAMPLES > 0.5
    assert placed.outside_windows_ns == 10e6
    assert p.frames[p.frame[p.parent.tolist().index(addmm)]].kind is FrameKind.NATIVE


def test_samples_beyond_an_ops_self_time_are_scaled_down_to_it() -> None:
    b, _line, linear, addmm = _tree()
    flat = flatten([(0, 10_000_000, linear), (1_000_000, 9_000_000, addmm)], [(0, 12_000_000)])
    seg = Segment(1, 1_000, 9_000, (StackFrame("at::_ops::addmm::call", LIBTORCH, 0),))  # 8 ms on an op of 8 ms self
    apply(
        place([seg, Segment(1, 1_000, 9_000, (StackFrame("malloc", "/lib/libc.so.6", 0),))], flat, 0, b), b, 1000, False
    )
    values = b.metric_values("cpu_time_ns")
    assert values[addmm] == pytest.approx(0.0, abs=1e-6)
    assert sum(v for n, v in values.items() if b.parent_of(n) == addmm) == pytest.approx(8e6)


def test_view_by_layer_sums_native_frames_by_their_layer() -> None:
    line = Frame.python("train.py", 12, "<module>")
    mm = Frame.op("aten::mm")
    p = build(
        [
            ([line, mm], {"cpu_time_ns": 2.0}),
            (
                [line, mm, Frame.native("mkl_blas_sgemm", "libtorch_cpu.so", "kernel library: MKL")],
                {"cpu_time_ns": 6.0},
            ),
            ([line, mm, Frame.native("THPVariable_mm", "libtorch_python.so", layers.DISPATCH)], {"cpu_time_ns": 1.0}),
            ([line, Frame.native(INTERPRETER, "", layers.PYTHON)], {"cpu_time_ns": 1.0}),
        ]
    )
    rows = dict(group(p, "layer", ["cpu_time_ns"]).rows)
    assert rows == {
        "kernel library: MKL": {"cpu_time_ns": 6.0},
        None: {"cpu_time_ns": 2.0},
        layers.DISPATCH: {"cpu_time_ns": 1.0},
        layers.PYTHON: {"cpu_time_ns": 1.0},
    }
    per_line = dict(group(p, "line-layer", ["cpu_time_ns"]).rows)
    assert per_line["train.py:12 · kernel library: MKL"] == {"cpu_time_ns": 6.0}
    assert per_line["train.py:12"] == {"cpu_time_ns": 2.0}


def test_without_py_spy_the_run_goes_on_and_says_so_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from kernelscope.collect.native import NativeSampling, spy

    monkeypatch.setattr(spy, "find_py_spy", lambda: None)
    sampling = NativeSampling(50)
    assert not sampling.on
    meta, line = sampling.finish(ProfileBuilder(), device_run=False)
    assert line == "native sampling unavailable: py-spy is not installed (pip install 'kernelscope[native]')"
    assert "\n" not in line and meta["unavailable"]


def test_without_ptrace_permission_the_run_goes_on_and_says_so_in_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from kernelscope.collect.native import NativeSampling, spy

    # given: a py-spy that is refused the process, as py-spy says it
    fake = tmp_path / "py-spy"
    fake.write_text(
        "#!/bin/sh\necho \"Permission Denied: Try running again with elevated permissions by going 'sudo !!'\"\nexit 1\n"
    )
    fake.chmod(0o755)
    monkeypatch.setattr(spy, "find_py_spy", lambda: str(fake))
    sampling = NativeSampling(50)
    assert not sampling.on
    _meta, line = sampling.finish(ProfileBuilder(), device_run=False)
    assert line.startswith("native sampling unavailable: no permission to read this process (ptrace)")
    assert "\n" not in line


# --- real programs (slow: py-spy reads torch's symbols before it samples) ---------------------------


def _run_native(tmp: Path, script: str, *args: str, rate: int = 20) -> object:
    from kernelscope.collect.native.spy import find_py_spy

    if find_py_spy() is None:
        pytest.skip("py-spy is not installed")
    out = tmp / "native.ksprof"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "kernelscope",
            "run",
            "--native",
            "--native-rate",
            str(rate),
            "--max-overhead",
            "0",
            "--no-view",
            "-o",
            str(out),
            str(REPO / "tests" / "fixtures" / script),
            *args,
        ],
        capture_output=True,
        text=True,
        env=env_without_color(),
        timeout=300,
        cwd=tmp,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    profile = load(str(out))
    native = profile.metadata["native"]
    if native.get("unavailable"):
        pytest.skip(f"py-spy cannot sample here: {native['unavailable']}")
    lines = [ln for ln in proc.stderr.splitlines() if "native samples:" in ln]
    assert len(lines) == 1  # the one line the run states
    return profile


def _layer_times(profile: object, under: str | None = None) -> dict[str, float]:
    p = profile  # a Profile
    cpu = p.exclusive("cpu_time_ns")  # type: ignore[attr-defined]
    out: dict[str, float] = {}
    for n in range(1, len(p)):  # type: ignore[arg-type]
        f = p.frames[p.frame[n]]  # type: ignore[attr-defined]
        if f.kind is not FrameKind.NATIVE:
            continue
        if under is not None and under not in {a.name for a in p.path(n)}:  # type: ignore[attr-defined]
            continue
        out[f.cls] = out.get(f.cls, 0.0) + float(cpu[n])
    return out


@pytest.fixture(scope="module")
def mlp_profile(tmp_path_factory: pytest.TempPathFactory) -> object:
    return _run_native(tmp_path_factory.mktemp("mlp"), "native_mlp.py", "3.0")


@pytest.fixture(scope="module")
def tiny_profile(tmp_path_factory: pytest.TempPathFactory) -> object:
    # complete recording of tiny ops costs ~15x (benchmarks/README.md), so the 3-s loop gets ~0.6 s of its own
    # time recorded: 100 samples a second give the ops there enough samples to split (20/s gave 5-15)
    return _run_native(tmp_path_factory.mktemp("tiny"), "native_tinyops.py", "3.0", rate=100)


@pytest.mark.slow
def test_a_matmul_heavy_model_spends_its_addmm_time_in_the_blas_library_under_its_line(mlp_profile: object) -> None:
    p = mlp_profile
    layers_in_addmm = _layer_times(p, under="aten::addmm")
    kernels = sum(
        v for k, v in layers_in_addmm.items() if k.startswith(layers.KERNEL_PREFIX + "MKL") or "blas" in k.lower()
    )
    assert kernels > 0.5 * sum(layers_in_addmm.values()), layers_in_addmm
    # ... and those native frames sit under the model's line and its Linear modules (all but a stray sample at an
    # op's edge, where the clock's residual error may put one in the op next to it)
    src = (REPO / "tests" / "fixtures" / "native_mlp.py").read_text().splitlines()
    model_line = next(i for i, text in enumerate(src, 1) if "y = model(x)" in text)
    cpu = p.exclusive("cpu_time_ns")  # type: ignore[attr-defined]
    placed, elsewhere = 0.0, []
    for n in range(1, len(p)):  # type: ignore[arg-type]
        f = p.frames[p.frame[n]]  # type: ignore[attr-defined]
        if f.kind is FrameKind.NATIVE and f.cls.startswith(layers.KERNEL_PREFIX + "MKL"):
            path = p.path(n)  # type: ignore[attr-defined]
            if any(a.kind is FrameKind.PYTHON and a.line == model_line for a in path) and any(
                a.kind is FrameKind.MODULE and a.cls == "Linear" for a in path
            ):
                placed += float(cpu[n])
            else:
                elsewhere.append(([a.label() for a in path], float(cpu[n])))
    assert placed >= 0.9 * (placed + sum(v for _, v in elsewhere)), elsewhere
    meta = p.metadata["native"]  # type: ignore[attr-defined]
    assert meta["samples_in_ops"] > 0 and meta["ops_split"] >= 1 and meta["rate"] == 20


@pytest.mark.slow
def test_a_tiny_op_program_spends_its_host_time_in_dispatch_autograd_and_python_not_kernels(
    tiny_profile: object,
) -> None:
    times = _layer_times(tiny_profile)
    overhead = sum(
        times.get(k, 0.0) for k in (layers.DISPATCH, layers.AUTOGRAD, layers.PYTHON, layers.ALLOCATOR, layers.PROFILER)
    )
    kernels = sum(v for k, v in times.items() if k.startswith(layers.KERNEL_PREFIX))
    assert overhead > 2 * kernels, times


@pytest.mark.slow
def test_a_compiled_cpu_model_spends_its_time_in_the_generated_code_under_the_compiled_region(tmp_path: Path) -> None:
    p = _run_native(tmp_path, "native_compiled.py", "3.0")
    src = (REPO / "tests" / "fixtures" / "native_compiled.py").read_text().splitlines()
    fused_line = next(i for i, text in enumerate(src, 1) if "x.sin() * x.cos()" in text)
    cpu = p.exclusive("cpu_time_ns")  # type: ignore[attr-defined]
    compiled: dict[str, float] = {}
    for n in range(1, len(p)):  # type: ignore[arg-type]
        f = p.frames[p.frame[n]]  # type: ignore[attr-defined]
        if f.kind is not FrameKind.NATIVE:
            continue
        path = p.path(n)  # type: ignore[attr-defined]
        parent = path[-2]
        if parent.name.startswith("graph_") and "cpp_fused" in parent.name:  # the compiled kernel
            assert any(a.kind is FrameKind.PYTHON and a.line == fused_line for a in path), [a.label() for a in path]
            compiled[f.cls] = compiled.get(f.cls, 0.0) + float(cpu[n])
    generated = compiled.get(layers.INDUCTOR, 0.0) + compiled.get(layers.KERNEL_PREFIX + "SLEEF", 0.0)
    assert generated > 0.5 * sum(compiled.values()), compiled


@pytest.mark.slow
def test_view_by_layer_of_a_real_run(mlp_profile: object, tmp_path: Path) -> None:
    path = tmp_path / "p.ksprof"
    mlp_profile.save(str(path))  # type: ignore[attr-defined]
    proc = subprocess.run(
        [sys.executable, "-m", "kernelscope", "view", str(path), "--by", "layer", "--json"],
        capture_output=True,
        text=True,
        env=env_without_color(),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    rows = {r["key"]: r["metrics"] for r in json.loads(proc.stdout)["rows"]}
    assert "kernel library: MKL" in rows and None in rows


@pytest.mark.slow
def test_exports_and_the_report_keep_native_frames(mlp_profile: object, tmp_path: Path) -> None:
    import gzip

    path = tmp_path / "p.ksprof"
    mlp_profile.save(str(path))  # type: ignore[attr-defined]
    symbol = next(
        f.name
        for f in mlp_profile.frames
        if f.kind is FrameKind.NATIVE and f.cls == layers.KERNEL_PREFIX + "MKL"  # type: ignore[attr-defined]
    )
    for fmt in ("pprof", "speedscope", "chrome"):
        out = tmp_path / f"out.{fmt}"
        proc = subprocess.run(
            [sys.executable, "-m", "kernelscope", "export", str(path), "--format", fmt, "-o", str(out)],
            capture_output=True,
            text=True,
            env=env_without_color(),
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        data = out.read_bytes()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        assert symbol.encode() in data, fmt
    chrome = json.loads((tmp_path / "out.chrome").read_text())
    events = chrome["traceEvents"] if isinstance(chrome, dict) else chrome
    assert any(e.get("cat") == "native" and e.get("name", "").startswith(symbol) for e in events)
    report = tmp_path / "r.html"
    proc = subprocess.run(
        [sys.executable, "-m", "kernelscope", "report", str(path), "-o", str(report)],
        capture_output=True,
        text=True,
        env=env_without_color(),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    html = report.read_text()
    assert 'native: ["#d1d5da", "#6a737d"]' in html and symbol in html


def test_the_header_states_the_samples_and_rate_or_why_there_are_none() -> None:
    from kernelscope.analysis.summary import summarize
    from kernelscope.render.header_text import header_items

    op = Frame.op("aten::mm")
    sampled = {
        "rate": 50,
        "min_samples": MIN_SAMPLES,
        "samples": 400,
        "samples_in_ops": 120,
        "samples_between_ops": 30,
        "ops_split": 4,
        "ops_below_min_samples": 2,
        "clock": {"searched_ms": 7.3},
    }
    lines = header_items(summarize(build([([op], {"time_ns": 1.0})], {"native": sampled})))
    assert lines[-1] == [
        "native: 400 stacks sampled (all threads, whole run) at 50/s, ~120 in ops, ~30 between ops; 4 ops split (those with >= 3 samples), "
        "2 left whole; clock within 7 ms"
    ]
    refused = {"rate": 50, "min_samples": MIN_SAMPLES, "unavailable": "no permission to read this process (ptrace)"}
    lines = header_items(summarize(build([([op], {"time_ns": 1.0})], {"native": refused})))
    assert lines[-1] == ["native sampling unavailable: no permission to read this process (ptrace)"]


@pytest.mark.slow
def test_profile_native_true_from_the_api(tmp_path: Path) -> None:
    from kernelscope.collect.native.spy import find_py_spy

    if find_py_spy() is None:
        pytest.skip("py-spy is not installed")
    script = tmp_path / "api_native.py"
    script.write_text(
        "import sys, time, torch, kernelscope\n"
        "x = torch.randn(256, 256)\n"
        "with kernelscope.profile(sys.argv[1], native=True, native_rate=50, max_overhead=0):\n"
        "    end = time.monotonic() + 1.5\n"
        "    while time.monotonic() < end:\n"
        "        y = torch.mm(x, x)\n"
    )
    out = tmp_path / "api.ksprof"
    proc = subprocess.run(
        [sys.executable, str(script), str(out)], capture_output=True, text=True, env=env_without_color(), timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    native = load(str(out)).metadata["native"]
    if native.get("unavailable"):
        pytest.skip(f"py-spy cannot sample here: {native['unavailable']}")
    assert native["rate"] == 50 and native["samples_in_ops"] > 0


def test_an_op_under_kernelscopes_wrapper_is_the_ops_and_a_hook_between_ops_is_kernelscopes() -> None:
    from kernelscope.collect import torch_lines

    b, _line, linear, addmm = _tree()
    flat = flatten([(0, 10_000_000, linear), (1_000_000, 9_000_000, addmm)], [(0, 12_000_000)])
    user = StackFrame("<module>", TRAIN, 12)
    wrapper = StackFrame("__torch_function__", torch_lines.__file__, 1)
    gemm = StackFrame("mkl_blas_sgemm", LIBTORCH, 0)
    placed = place(
        [Segment(1, 2_000, 6_000, (user, wrapper, gemm)), Segment(1, 10_000, 11_000, (user, wrapper))], flat, 0, b
    )
    assert placed.in_ops_ns == 4e6 and placed.own_ns == 1e6 and placed.between_ops_ns == 0
