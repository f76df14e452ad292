"""The advisor on a live JAX profile: the problems planted in tests/fixtures/planted_jax.py are found at their
lines (a jitted function recompiled per batch size, dtype round trips inside and outside jit, an eager chain, a
host callback inside jit that also splits two elementwise fusions); the same findings from the XPlane import."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("jax")

REPO = Path(__file__).resolve().parents[1]
PLANTED = REPO / "tests" / "fixtures" / "planted_jax.py"
# the planted lines, read from the file (importing it would import jax into the pytest process)
planted_jax = SimpleNamespace(
    **{m.group(1): int(m.group(2)) for m in re.finditer(r"^([A-Z_]+_LINE) = (\d+)$", PLANTED.read_text(), re.M)}
)


ENV = {**os.environ, "PYTHONPATH": str(REPO / "src"), "JAX_PLATFORMS": "cpu"}
CLI = [sys.executable, "-m", "kernelscope"]


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    """Findings of the live run and of its XPlane, imported."""
    out = tmp_path_factory.mktemp("planted_jax")
    code = (
        "import sys\n"
        "from kernelscope.collect.jax_live import profile_script\n"
        "p, outcome = profile_script(sys.argv[1], [], keep_xplane=sys.argv[3])\n"
        "p.save(sys.argv[2])\n"
        "sys.exit(outcome.exit_code)\n"
    )
    live, xplane = out / "planted.ksprof", out / "planted.xplane.pb"
    done = subprocess.run([sys.executable, "-c", code, str(PLANTED), str(live), str(xplane)], cwd=REPO, env=ENV, capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    result = {}
    for name, source in (("live", live), ("imported", xplane)):
        done = subprocess.run([*CLI, "analyze", "--json", str(source)], cwd=REPO, env=ENV, capture_output=True, text=True)  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        result[name] = json.loads(done.stdout)["findings"]
    return result


@pytest.mark.slow
def test_planted_jax_problems_are_found_at_their_lines(planted: dict[str, list[dict[str, Any]]]) -> None:
    found = planted["live"]
    findings = [f for f in found if f["rule"] == "jit_recompile"]
    assert len(findings) == 1
    (f,) = findings
    # 5 growing batches from one line, one more shape from another: 6 executables, reported where most came from
    assert f["occurrences"] == 6 and f["severity"] == "warning"
    assert f["line"] == planted_jax.RECOMPILE_LINE and f["file"].endswith("planted_jax.py")
    assert f"planted_jax.py:{planted_jax.STABLE_LINE} (1)" in f["evidence"]
    trips = {f["line"]: f for f in found if f["rule"] == "dtype_round_trip"}
    assert set(trips) == {planted_jax.ROUND_TRIP_LINE, planted_jax.EAGER_ROUND_TRIP_LINE}
    assert "bf16" in trips[planted_jax.ROUND_TRIP_LINE]["title"]  # fused inside jit: the parts' time
    assert "f16" in trips[planted_jax.EAGER_ROUND_TRIP_LINE]["title"]  # two eager conversion executables
    for trip in trips.values():
        assert trip["occurrences"] == 40 and trip["estimated_saving_ms"] > 0  # 20 calls, two conversions each
    eager = [f for f in found if f["rule"] == "eager_ops"]
    assert [f["line"] for f in eager] == [planted_jax.EAGER_CHAIN_LINE]
    assert eager[0]["occurrences"] == 20 and "multiply×2" in eager[0]["evidence"] and "tanh×1" in eager[0]["evidence"]


@pytest.mark.slow
@pytest.mark.parametrize("source", ["live", "imported"])
def test_a_host_callback_inside_jit_is_a_host_transfer_and_a_fusion_boundary(
    planted: dict[str, list[dict[str, Any]]], source: str
) -> None:
    found = planted[source]
    (transfer,) = [f for f in found if f["rule"] == "xla_host_transfer" and "callback" in f["evidence"]]
    assert (transfer["line"], transfer["occurrences"]) == (planted_jax.CALLBACK_LINE, 20)
    assert "pure_callback" in transfer["evidence"] and transfer["estimated_saving_ms"] > 0
    (boundary,) = [f for f in found if f["rule"] == "xla_fusion_boundary"]
    assert boundary["line"] == planted_jax.CALLBACK_LINE and boundary["file"].endswith("planted_jax.py")
    assert "custom-call xla_ffi_python_cpu_callback" in boundary["title"]
    assert boundary["occurrences"] == 20 and boundary["estimated_saving_ms"] > 0
    # the saving is the smaller kernel's time: less than the pair's, more than nothing
    assert "→ custom-call xla_ffi_python_cpu_callback →" in boundary["evidence"]


@pytest.mark.slow
def test_host_reads_in_a_loop_are_found_at_their_line_in_a_live_run(planted: dict[str, list[dict[str, Any]]]) -> None:
    (read,) = [f for f in planted["live"] if f["rule"] == "xla_host_transfer" and "host reads" in f["evidence"]]
    assert (read["line"], read["occurrences"]) == (planted_jax.HOST_READ_LINE, 20)  # once per call of score()
    assert "estimated_saving_ms" not in read  # a wait is saved only where the host has other work to overlap
    # an imported XPlane names no line for a host read
    assert not [f for f in planted["imported"] if f.get("line") == planted_jax.HOST_READ_LINE]
