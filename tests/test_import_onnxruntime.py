"""ONNX Runtime profiles, made in the test by a real ORT CPU session over a model exported from torch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kernelscope.cli.main import main
from kernelscope.importers import find_importer, import_file
from kernelscope.model import FrameKind, Profile

FIXTURES = Path(__file__).parent / "fixtures"


def _profile(tmp: Path, exporter: str) -> Path:
    pytest.importorskip("torch")
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    if exporter == "dynamo":
        pytest.importorskip("onnxscript")
    r = subprocess.run(
        [sys.executable, str(FIXTURES / "ort_profile.py"), str(tmp), exporter],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return Path(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def dynamo_profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _profile(tmp_path_factory.mktemp("ort_dynamo"), "dynamo")


@pytest.fixture(scope="session")
def script_profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _profile(tmp_path_factory.mktemp("ort_script"), "script")


def _rows(profile: Profile, by: str, metric: str = "time_ns") -> dict[str | None, float]:
    return {k: v[metric] for k, v in profile.view(by=by, metrics=[metric]).rows}


@pytest.mark.slow
def test_dynamo_export_maps_nodes_to_modules_and_lines(dynamo_profile: Path) -> None:
    assert find_importer(str(dynamo_profile)).name == "onnxruntime"
    profile = import_file(str(dynamo_profile))
    assert profile.metadata["onnx_model"].endswith("model.onnx")
    assert profile.metadata["providers"] == ["CPUExecutionProvider"]
    lines = _rows(profile, "line")
    source = (FIXTURES / "ort_profile.py").read_text().splitlines()
    want = {i + 1 for i, text in enumerate(source) if "self.fc1(x)" in text or "self.fc2(h)" in text}
    # Block.forward's two lines; the last Linear is called by Sequential (torch code): no user line
    assert {k.rsplit("/", 1)[-1] for k in lines if k} == {f"ort_profile.py:{n}" for n in want}
    modules = _rows(profile, "module")
    assert {"0.fc1", "0.fc2", "1.fc1", "1.fc2", "2"} <= set(modules)
    # every node run is counted: 9 nodes (Gemm+Relu fused into FusedGemm: 7 kernels) x 5 runs
    # (+ 5 model_run scopes, model_loading_uri and session_initialization)
    assert profile.total("count") == pytest.approx(5 * 7 + 5 + 2)
    # a module's time nests: 0 (Block) holds its Linear layers and its Add
    paths = [[(f.kind, f.name) for f in profile.path(n)] for n in range(1, len(profile))]
    fc1 = next(p for p in paths if p[-1] == (FrameKind.OP, "FusedGemm") and (FrameKind.MODULE, "0.fc1") in p)
    # as in a live run: the module, the line its forward ran, the module it called there, the op
    assert [k for k, _n in fc1[-4:]] == [FrameKind.MODULE, FrameKind.PYTHON, FrameKind.MODULE, FrameKind.OP]
    # GEMMs carry FLOPs and ORT's bytes on the same op
    ops = profile.view(by="op", metrics=["flops", "bytes"]).rows
    by_op = dict(ops)
    assert by_op["FusedGemm"]["flops"] == pytest.approx(5 * 2 * (2 * 8 * 64 * 256))
    assert by_op["FusedGemm"]["bytes"] > 0 and by_op["Add"]["bytes"] > 0


@pytest.mark.slow
def test_script_export_names_give_module_paths(script_profile: Path) -> None:
    profile = import_file(str(script_profile))
    modules = _rows(profile, "module")
    assert {"0.fc1", "0.fc2", "1.fc1", "1.fc2", "2"} <= set(modules)
    assert not any(f.kind is FrameKind.PYTHON for f in profile.frames)  # this exporter keeps no lines


@pytest.mark.slow
@pytest.mark.parametrize("cut", [0.3, 0.97])
def test_truncated_profile_is_one_line_exit_2(
    script_profile: Path, tmp_path: Path, cut: float, capsys: pytest.CaptureFixture[str]
) -> None:
    data = script_profile.read_bytes()
    bad = tmp_path / "ort_profile_cut.json"
    bad.write_bytes(data[: int(len(data) * cut)])
    assert main(["view", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "ONNX Runtime" in err and "Traceback" not in err


def test_profile_without_node_events_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "p.json"
    bad.write_text('[{"cat": "Session", "pid": 1, "tid": 1, "dur": 5, "ts": 3, "ph": "X", "name": "model_run"}]')
    assert main(["view", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no node events" in err
