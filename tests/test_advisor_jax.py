"""The advisor on a live JAX profile: the problems planted in tests/fixtures/planted_jax.py are found at their
lines (a jitted function recompiled per batch size, dtype round trips inside and outside jit, an eager chain)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("jax")

REPO = Path(__file__).resolve().parents[1]
PLANTED = REPO / "tests" / "fixtures" / "planted_jax.py"
# the planted lines, read from the file (importing it would import jax into the pytest process)
planted_jax = SimpleNamespace(
    **{m.group(1): int(m.group(2)) for m in re.finditer(r"^([A-Z_]+_LINE) = (\d+)$", PLANTED.read_text(), re.M)}
)


@pytest.mark.slow
def test_planted_jax_problems_are_found_at_their_lines(tmp_path: Path) -> None:
    out = tmp_path / "planted.ksprof"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "JAX_PLATFORMS": "cpu"}
    cli = [sys.executable, "-m", "kernelscope"]
    done = subprocess.run(
        [*cli, "run", "--no-view", "-o", str(out), str(PLANTED)], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    done = subprocess.run([*cli, "analyze", "--json", str(out)], cwd=REPO, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout)["findings"]
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
