"""Perfetto ``.pftrace`` imports. The files are written by the ``perfetto`` package's TraceProtoBuilder in
the layouts of libkineto's PerfettoTraceBuilder and rocprofv3's generatePerfetto.cpp: SYNTHETIC in their
layout (see tests/fixtures/pftrace_traces.py); the Kineto one carries the events of a real A100 trace when
../shared/traces is there."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")

from fixtures.pftrace_traces import kineto_pftrace, rocprof_pftrace
from fixtures.vintage_traces import compiled_2025
from kernelscope.cli.main import main
from kernelscope.importers import find_importer, import_file
from kernelscope.model import Profile


def _paths(profile: Profile) -> dict[tuple[str, ...], float]:
    ex = profile.exclusive("time_ns")
    return {tuple(f.name for f in profile.path(n)): float(ex[n]) for n in range(1, len(profile)) if float(ex[n])}


def _kernels(profile: Profile) -> dict[str, float]:
    out: dict[str, float] = {}
    for path, t in _paths(profile).items():
        out[path[-1]] = out.get(path[-1], 0.0) + t
    return out


def _both(tmp_path: Path, chrome: dict[str, Any]) -> tuple[Profile, Profile]:
    js = tmp_path / "trace.json"
    js.write_text(json.dumps(chrome))
    pf = kineto_pftrace(chrome, tmp_path / "trace.pftrace")
    assert find_importer(str(pf)).name == "pftrace"
    return import_file(str(js)), import_file(str(pf))


def test_kineto_pftrace_gives_the_same_profile_as_its_json(tmp_path: Path) -> None:
    js, pf = _both(tmp_path, compiled_2025())
    assert _paths(pf) == _paths(js)
    assert pf.metadata["source"]["format"] == "pftrace-kineto"
    assert pf.metadata.get("schemaVersion") == js.metadata.get("schemaVersion")


def test_kineto_pftrace_of_a_real_a100_trace(tmp_path: Path, shared_traces: Path) -> None:
    chrome = json.loads(gzip.decompress((shared_traces / "hta_a100_alexnet_cuda_sync.json.gz").read_bytes()))
    js, pf = _both(tmp_path, chrome)
    assert pf.total("time_ns") == js.total("time_ns")
    # every kernel, memcpy and op keeps its time; only Kineto's user annotations differ (no categories in
    # its Perfetto output: they are read as ops, docs/import.md)
    assert {k: v for k, v in _kernels(pf).items() if not k.startswith("[")} == pytest.approx(
        {k: v for k, v in _kernels(js).items() if not k.startswith("[")}
    )


def test_rocprof_pftrace_joins_kernels_to_hip_launches_and_roctx_ranges(tmp_path: Path) -> None:
    profile = import_file(str(rocprof_pftrace(tmp_path / "results.pftrace")))
    assert _paths(profile) == {  # the numbers of the CSV test (tests/test_import_rocprof.py)
        ("forward", "Cijk_Alik_Bljk_SB_MT128x128"): 40_000.0,
        ("forward", "elementwise_kernel"): 10_000.0,
        ("backward", "Cijk_Alik_Bljk_SB_MT128x128"): 40_000.0,
    }
    assert profile.metadata["source"]["format"] == "pftrace-rocprofv3"
    assert profile.metadata["import_warnings"] == {"rocprofv3 hsa_api slices not read": 1}


@pytest.mark.parametrize("cut", [0.3, 0.77, -1])
def test_truncated_or_corrupt_pftrace_is_one_line_exit_2(
    tmp_path: Path, cut: float, capsys: pytest.CaptureFixture[str]
) -> None:
    data = rocprof_pftrace(tmp_path / "whole.pftrace").read_bytes()
    path = tmp_path / "bad.pftrace"
    path.write_bytes(data[: int(len(data) * cut)] if cut > 0 else b"\x0b\xff\xff" + data[3:])
    assert main(["view", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Perfetto" in err and "Traceback" not in err
