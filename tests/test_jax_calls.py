"""The call-site recorder of live JAX runs: it notes top-level calls of the program's jitted functions and is
otherwise invisible (results, lower(), __wrapped__, methods, decorator factories, nested calls, library
functions). The checks run in a child process (tests/fixtures/jax_calls_probe.py): JAX computations in the
pytest process would make every later fork (Dask, process pools) warn."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("jax")

REPO = Path(__file__).resolve().parents[1]
PROBE = REPO / "tests" / "fixtures" / "jax_calls_probe.py"
CHECKS = (
    "top_level_calls_are_noted_with_their_lines_and_nothing_else_changes",
    "calls_while_tracing_another_function_are_not_counted",
    "methods_factories_and_library_functions",
    "eager_ops_are_noted_with_their_lines",
    "remove_restores_jax_jit",
)


def test_the_recorder_notes_calls_and_changes_nothing_else() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, str(PROBE)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert [line.split()[1] for line in done.stdout.splitlines() if line.startswith("ok ")] == list(CHECKS)
