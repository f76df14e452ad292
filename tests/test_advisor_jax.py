"""The advisor on a live JAX profile: the problem planted in tests/fixtures/planted_jax.py is found at its line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("jax")

REPO = Path(__file__).resolve().parents[1]
PLANTED = REPO / "tests" / "fixtures" / "planted_jax.py"
sys.path.insert(0, str(PLANTED.parent))
import planted_jax  # noqa: E402


@pytest.mark.slow
def test_a_jitted_function_recompiled_per_shape_is_found_at_its_call_line(tmp_path: Path) -> None:
    out = tmp_path / "planted.ksprof"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "JAX_PLATFORMS": "cpu"}
    cli = [sys.executable, "-m", "kernelscope"]
    done = subprocess.run(
        [*cli, "run", "--no-view", "-o", str(out), str(PLANTED)], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    done = subprocess.run([*cli, "analyze", "--json", str(out)], cwd=REPO, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    findings = [f for f in json.loads(done.stdout)["findings"] if f["rule"] == "jit_recompile"]
    assert len(findings) == 1
    (f,) = findings
    # 5 growing batches from one line, one more shape from another: 6 executables, reported where most came from
    assert f["occurrences"] == 6 and f["severity"] == "warning"
    assert f["line"] == planted_jax.RECOMPILE_LINE and f["file"].endswith("planted_jax.py")
    assert f"planted_jax.py:{planted_jax.STABLE_LINE} (1)" in f["evidence"]
