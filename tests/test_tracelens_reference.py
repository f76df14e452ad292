"""The OWLv2 H100 trace against TraceLens' own reports (../shared/traces/reference/).

Timeline within 1%, top-10 kernels within 0.5%, top-10 ops (direct kernel time) within 1%.
Skips when ../shared/traces is absent (a fresh clone) or no Kineto importer is registered yet.
"""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pytest

from kernelscope.model import Category, FrameKind, Profile

TRACES = Path(__file__).parents[1].parent / "shared" / "traces"
TRACE = TRACES / "tracelens_h100_owlv2_inference_modules_memory.json.gz"
REFERENCE = TRACES / "reference"

pytestmark = [
    pytest.mark.traces,
    pytest.mark.skipif(not TRACE.exists(), reason="../shared/traces is absent"),
]


def _kineto_registered() -> bool:
    try:
        from kernelscope.importers import importers
    except ImportError:
        return False
    return any(i.name == "kineto" for i in importers())


@pytest.fixture(scope="module")
def owlv2() -> Profile:
    if not _kineto_registered():
        pytest.skip("the Kineto importer is not available yet")
    from kernelscope.inputs import open_profile

    return open_profile(str(TRACE))


def _csv(name: str) -> list[dict[str, str]]:
    with open(REFERENCE / f"tracelens_h100_owlv2_{name}.csv", newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _top10(totals: dict[str, float]) -> list[str]:
    return sorted(totals, key=lambda k: -totals[k])[:10]


# --- timeline ------------------------------------------------------------------------------------
def test_gpu_timeline_matches_tracelens(owlv2: Profile) -> None:
    from kernelscope.analysis.timeline import breakdown

    # given TraceLens' gpu_timeline (type, time ms)
    ref = {r["type"]: float(r["time ms"]) for r in _csv("gpu_timeline")}
    # when
    (dev,) = breakdown(owlv2).to_json()["devices"]
    # then every row agrees within 1%
    got = {
        "computation_time": dev["computation_time_ms"],
        "exposed_comm_time": dev["exposed_comm_time_ms"],
        "exposed_memcpy_time": dev["exposed_memcpy_time_ms"],
        "busy_time": dev["busy_time_ms"],
        "idle_time": dev["idle_time_ms"],
        "total_time": dev["total_time_ms"],
        "total_comm_time": dev["total_comm_time_ms"],
        "total_memcpy_time": dev["total_memcpy_time_ms"],
    }
    assert set(got) == set(ref)
    for key, value in ref.items():
        assert got[key] == pytest.approx(value, rel=0.01, abs=1e-3), key


# --- kernels -------------------------------------------------------------------------------------
def kernel_totals(profile: Profile) -> tuple[dict[str, float], dict[str, float]]:
    """Per kernel name: summed ``time_ns`` (µs) and ``count`` over kernel nodes.

    Copies and sets are kernel frames too, but TraceLens' kernel_summary lists only kernels:
    keep the nodes whose timeline rows are kernels.
    """
    tl = profile.timeline
    assert tl is not None
    is_kernel = np.isin(tl.category, [int(Category.KERNEL), int(Category.COMM)])
    kernel_nodes = set(np.unique(tl.node[is_kernel]).tolist())
    time_ns, count = profile.exclusive("time_ns"), profile.exclusive("count")
    us: dict[str, float] = defaultdict(float)
    n: dict[str, float] = defaultdict(float)
    for node in sorted(kernel_nodes):
        f = profile.frame_of(node)
        if f.kind is FrameKind.KERNEL:
            us[f.name] += float(time_ns[node]) / 1e3
            n[f.name] += float(count[node])
    return dict(us), dict(n)


def test_top10_kernels_match_tracelens(owlv2: Profile) -> None:
    # given TraceLens' kernel_summary, rows per (parent op, kernel, stream): summed per kernel name
    ref_us: dict[str, float] = defaultdict(float)
    ref_n: dict[str, int] = defaultdict(int)
    for r in _csv("kernel_summary"):
        ref_us[r["Kernel name"]] += float(r["Kernel duration (µs)_sum"])
        ref_n[r["Kernel name"]] += int(r["Kernel duration (µs)_count"])
    # when
    got_us, got_n = kernel_totals(owlv2)
    # then the same ten kernels lead, with the same totals (0.5%) and counts
    top = _top10(ref_us)
    assert _top10(got_us) == top
    for name in top:
        assert got_us[name] == pytest.approx(ref_us[name], rel=0.005), name
        assert got_n[name] == ref_n[name], name


# --- ops -----------------------------------------------------------------------------------------
def op_direct_kernel_time(profile: Profile) -> dict[str, float]:
    """Per op name: device time (µs) of the kernels whose innermost enclosing op is that op."""
    time_ns = profile.exclusive("time_ns")
    out: dict[str, float] = defaultdict(float)
    for node in range(1, len(profile)):
        if profile.frame_of(node).kind is not FrameKind.KERNEL or not time_ns[node]:
            continue
        op = next((a for a in profile.ancestors(node) if profile.frame_of(a).kind is FrameKind.OP), None)
        if op is not None:
            out[profile.frame_of(op).name] += float(time_ns[node]) / 1e3
    return dict(out)


def test_top10_ops_match_tracelens(owlv2: Profile) -> None:
    # given TraceLens' ops_summary (direct kernel time per op name, µs)
    ref = {r["name"]: float(r["total_direct_kernel_time_sum"]) for r in _csv("ops_summary")}
    # when
    got = op_direct_kernel_time(owlv2)
    # then
    top = _top10(ref)
    assert _top10(got) == top
    for name in top:
        assert got[name] == pytest.approx(ref[name], rel=0.01), name


# --- the CLI -------------------------------------------------------------------------------------
def test_timeline_cli_json_on_the_trace(owlv2: Profile) -> None:
    from kernelscope.cli.main import main

    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["timeline", str(TRACE), "--json"])
    assert code == 0
    doc = json.loads(out.getvalue())
    assert doc["schema"] == 1
    (dev,) = doc["devices"]
    assert dev["device"]
    for key in (
        "total_time_ms",
        "busy_time_ms",
        "idle_time_ms",
        "computation_time_ms",
        "exposed_comm_time_ms",
        "exposed_memcpy_time_ms",
        "total_comm_time_ms",
        "total_memcpy_time_ms",
        "unlinked_events",
        "unlinked_time_ms",
    ):
        assert isinstance(dev[key], (int, float)), key
    assert dev["busy_time_ms"] + dev["idle_time_ms"] == pytest.approx(dev["total_time_ms"])
    gaps = doc["idle_gaps"]
    assert set(gaps["totals"]) == {"host_wait", "kernel_wait", "other"}
    assert gaps["top"] and all(g["duration_us"] > 0 for g in gaps["top"])
    (launch,) = doc["launch"]
    assert (
        launch["kernels"] == 4330 and 0 < launch["delay_median_us"] <= launch["delay_p90_us"] <= launch["delay_max_us"]
    )
    # 80 cudaStreamSynchronize, 2 cudaDeviceSynchronize, item ops and 55 pageable DtoH copies, folded
    assert doc["syncs"]["count"] > 0 and doc["syncs"]["by_line"]
