"""rocprofv3 JSON traces. A SYNTHETIC file in the ``rocprofiler-sdk-tool`` layout rocprofiler-sdk documents and
its own tests read (no AMD GPU or rocprofv3 here to record a real one); the numbers are those of the CSV
test (tests/test_import_rocprof.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kernelscope.cli.main import main
from kernelscope.importers import find_importer, import_file

GEMM, ELEMENTWISE = "Cijk_Alik_Bljk_SB_MT128x128", "elementwise_kernel"


def _dispatch(kernel_id: int, corr: int, start: int, end: int) -> dict[str, Any]:
    return {
        "size": 144,
        "kind": 12,
        "operation": 1,
        "thread_id": 238,
        "correlation_id": {"internal": corr, "external": 0},
        "start_timestamp": start,
        "end_timestamp": end,
        "dispatch_info": {
            "size": 88,
            "agent_id": {"handle": 140001},
            "queue_id": {"handle": 1},
            "kernel_id": kernel_id,
            "dispatch_id": corr,
            "private_segment_size": 0,
            "group_segment_size": 0,
            "workgroup_size": {"x": 256, "y": 1, "z": 1},
            "grid_size": {"x": 65536, "y": 1, "z": 1},
        },
    }


def _hip(op: int, corr: int, start: int, end: int) -> dict[str, Any]:
    return {
        "size": 56,
        "kind": 3,
        "operation": op,
        "thread_id": 238,
        "correlation_id": {"internal": corr, "external": 0},
        "start_timestamp": start,
        "end_timestamp": end,
    }


def results(hip: bool = True) -> dict[str, Any]:
    ops = ["hipApiName", "hipLaunchKernel", "hipDeviceSynchronize"]
    tool = {
        "metadata": {"pid": 238, "init_time": 1, "fini_time": 2},
        "agents": [{"id": {"handle": 140001}, "logical_node_id": 2, "type": 2, "name": "gfx942"}],
        "kernel_symbols": [
            {"kernel_id": 16, "kernel_name": "_Z18elementwise_kernelv", "formatted_kernel_name": ELEMENTWISE},
            {"kernel_id": 33, "kernel_name": GEMM, "formatted_kernel_name": GEMM},
        ],
        "strings": {"buffer_records": [{"kind": "HIP_RUNTIME_API", "operations": ops}]},
        "buffer_records": {
            "kernel_dispatch": [
                _dispatch(33, 5, 1000000, 1040000),
                _dispatch(16, 6, 1050000, 1060000),
                _dispatch(33, 8, 1100000, 1140000),
            ],
            "hip_api": [
                _hip(1, 5, 990000, 995000),
                _hip(1, 6, 996000, 998000),
                _hip(2, 7, 999000, 1070000),
                _hip(1, 8, 1080000, 1085000),
            ]
            if hip
            else [],
        },
    }
    return {"rocprofiler-sdk-tool": [tool]}


def _paths(path: Path) -> dict[tuple[str, ...], float]:
    profile = import_file(str(path))
    ex = profile.exclusive("time_ns")
    return {tuple(f.name for f in profile.path(n)): float(ex[n]) for n in range(1, len(profile)) if float(ex[n])}


def test_dispatches_join_their_hip_launch(tmp_path: Path) -> None:
    path = tmp_path / "238_results.json"
    path.write_text(json.dumps(results()))
    assert find_importer(str(path)).name == "rocprofv3-json"
    # linked: each kernel sits where its hipLaunchKernel was called (the top level: no markers in JSON)
    assert _paths(path) == {(GEMM,): 80_000.0, (ELEMENTWISE,): 10_000.0}


def test_without_hip_records_kernels_are_unlinked_and_said_so(tmp_path: Path) -> None:
    path = tmp_path / "238_results.json"
    path.write_text(json.dumps(results(hip=False)))
    profile = import_file(str(path))
    assert profile.total("time_ns") == pytest.approx(90_000.0)
    assert all(p[0] == "launched before trace" for p in _paths(path))
    assert any("hip_api" in w for w in profile.metadata["import_warnings"])


@pytest.mark.parametrize("cut", [0.4, 0.95])
def test_truncated_json_is_one_line_exit_2(tmp_path: Path, cut: float, capsys: pytest.CaptureFixture[str]) -> None:
    text = json.dumps(results())
    path = tmp_path / "238_results.json"
    path.write_text(text[: int(len(text) * cut)])
    assert main(["view", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "rocprofv3" in err and "Traceback" not in err
