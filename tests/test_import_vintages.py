"""Kineto vintages: the 2021 `Call stack` arg, backward on its own autograd thread, compiled backward."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kernelscope.importers import import_file
from kernelscope.importers.kineto.pyframes import call_stack_frames
from kernelscope.model import Frame, FrameKind, Profile

sys.path.insert(0, str(Path(__file__).parent / "fixtures"))
import vintage_traces

FIXTURES = Path(__file__).parent / "fixtures"


def _write(tmp_path: Path, doc: dict[str, Any], name: str) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


def _backward_shares(profile: Profile, metric: str = "time_ns") -> tuple[float, float]:
    """(backward time, the part of it under a forward user line)."""
    col = profile.exclusive(metric)
    total = under = 0.0
    for node in range(len(profile)):
        value = float(col[node])
        if not value:
            continue
        path = profile.path(node)
        kinds = [f.kind for f in path]
        if FrameKind.BACKWARD not in kinds:
            continue
        total += value
        if FrameKind.PYTHON in kinds[: kinds.index(FrameKind.BACKWARD)]:
            under += value
    return total, under


def _by_line(profile: Profile, metric: str) -> dict[str | None, float]:
    grouped = profile.view(by="line", metrics=[metric])
    return {key: vals[metric] for key, vals in grouped.rows}


# --- the Call stack parser ---------------------------------------------------
def test_call_stack_keeps_user_frames_and_modules_outermost_first() -> None:
    text = (
        "<built-in function linear>;torch/nn/modules/linear.py(130): forward;"
        "torch/nn/modules/module.py(1782): _call_impl;nn.Module: Linear_0;model.py(10): forward;"
        "/usr/lib/python3.11/runpy.py(88): _run_code;"
        "/opt/conda/lib/python3.8/site-packages/transformers/models/bert.py(300): forward;"
        "nn.Module: Net_0;train.py(17): <module>;"
    )
    assert call_stack_frames(text) == (
        Frame.python("train.py", 17, "<module>"),
        Frame.module_("Net_0", "Net"),
        Frame.python("/opt/conda/lib/python3.8/site-packages/transformers/models/bert.py", 300, "forward"),
        Frame.python("model.py", 10, "forward"),
        Frame.module_("Linear_0", "Linear"),
    )
    assert call_stack_frames("<built-in method run_backward>;torch/autograd/__init__.py(255): backward;") == ()


# --- synthetic vintages --------------------------------------------------------
def test_2021_ops_land_on_the_script_lines_and_backward_under_them(tmp_path: Path) -> None:
    profile = import_file(_write(tmp_path, vintage_traces.legacy_2021(), "legacy_2021.json"))
    lines = _by_line(profile, "time_ns")
    assert None not in lines  # every kernel under a user line
    assert set(lines) == {f"{vintage_traces.SCRIPT}:{n}" for n in (31, 32, 33, 36, 57)}
    # conv forward 2x40 µs + its backward 2x80 µs, on the layer's line
    assert lines[f"{vintage_traces.SCRIPT}:31"] == pytest.approx(240_000.0)
    backward, under = _backward_shares(profile)
    assert backward == pytest.approx(2 * 2 * sum(u for *_r, u in vintage_traces.LAYERS) * 1000)
    assert under / backward == 1.0
    # the nested op with the same stack sits under its outer op, not under a second copy of the lines
    for node in range(len(profile)):
        files = [f.file for f in profile.path(node) if f.kind is FrameKind.PYTHON]
        assert len(files) <= 2, files  # <module> and the layer's forward
    assert profile.metadata["import_warnings"] == {}


def test_compiled_backward_on_an_autograd_thread_listed_first(tmp_path: Path) -> None:
    profile = import_file(_write(tmp_path, vintage_traces.compiled_2025(), "compiled_2025.json"))
    backward, under = _backward_shares(profile)
    assert backward == pytest.approx(2 * 2 * 50_000.0)
    assert under == backward
    assert set(_by_line(profile, "time_ns")) == {"train.py:12"}


# --- a real trace (torch 2.13 writes `Call stack` under a verbose experimental config) ----------
@pytest.fixture(scope="session")
def real_callstack_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("torch")
    out = tmp_path_factory.mktemp("callstack") / "trace.json"
    subprocess.run(
        [sys.executable, str(FIXTURES / "callstack_train.py"), str(out)],
        check=True,
        capture_output=True,
        cwd=FIXTURES,
        timeout=300,
    )
    return out


def _as_2021(doc: dict[str, Any]) -> dict[str, Any]:
    """The real trace rewritten into the 2021 shape (SYNTHETIC rewrite of a real file): no python_function
    events, `Operator` for `cpu_op`; the ops' `Call stack` args are torch's own."""
    events = [e for e in doc["traceEvents"] if e.get("cat") != "python_function"]
    for e in events:
        if e.get("cat") == "cpu_op":
            e["cat"] = "Operator"
    return {**doc, "traceEvents": events}


@pytest.mark.slow
def test_real_call_stacks_give_the_lines_of_the_python_events(real_callstack_trace: Path, tmp_path: Path) -> None:
    doc = json.loads(real_callstack_trace.read_text())
    assert any("Call stack" in e.get("args", {}) for e in doc["traceEvents"])
    with_events = import_file(str(real_callstack_trace))  # python_function events (Call stack ignored)
    stacks_only = import_file(_write(tmp_path, _as_2021(doc), "as_2021.json"))
    a, b = _by_line(with_events, "time_ns"), _by_line(stacks_only, "time_ns")
    assert a.keys() == b.keys()
    assert None not in b
    for key in a:
        assert b[key] == pytest.approx(a[key], rel=1e-9), key
    backward, under = _backward_shares(stacks_only)
    assert backward > 0
    # AccumulateGrad has no forward op (no sequence number): it stays under the backward() call's line
    assert under / backward >= 0.95
    # module frames come from the stacks' `nn.Module: X_N` entries
    assert {f.name for f in stacks_only.frames if f.kind is FrameKind.MODULE} >= {"Block_0", "Block_1", "Linear_0"}


# --- CUDA/HIP graph replays (synthetic: no GPU here to record one) ------------------------------
def _kernel_paths(profile: Profile) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for node in range(1, len(profile)):
        path = profile.path(node)
        if path[-1].kind is FrameKind.KERNEL:
            out[path[-1].name] = [f.name if f.kind is not FrameKind.PYTHON else f"{f.file}:{f.line}" for f in path[:-1]]
    return out


def test_graph_kernels_go_where_the_graph_was_captured(tmp_path: Path) -> None:
    profile = import_file(_write(tmp_path, vintage_traces.cuda_graphs(capture=True), "graphs.json"))
    assert _kernel_paths(profile) == {
        "sm80_gemm": ["model.py:10", "aten::mm"],
        "relu_kernel": ["model.py:10", "aten::relu"],
    }
    assert profile.metadata["cuda_graphs"] == {
        "kernels placed where captured": 6,
        "kernels under their graph launch": 0,
    }
    assert profile.total("time_ns") == pytest.approx(3 * 40_000.0)


def test_graph_kernels_without_their_capture_stay_under_the_launch(tmp_path: Path) -> None:
    profile = import_file(_write(tmp_path, vintage_traces.cuda_graphs(capture=False), "graphs.json"))
    launch = ["train.py:35", "cudaGraphLaunch"]
    assert _kernel_paths(profile) == {"sm80_gemm": launch, "relu_kernel": launch}
    assert profile.metadata["cuda_graphs"] == {
        "kernels placed where captured": 0,
        "kernels under their graph launch": 6,
    }
    assert any("graph launch" in w for w in profile.metadata["import_warnings"])
