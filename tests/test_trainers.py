"""Trainer integrations on real trainers (CPU): a Hugging Face ``Trainer`` on a GPT-2 built from a config, and a
Lightning ``Trainer`` on a small module; steps come from the trainer, one profile per run (per rank), coverage
stated as ``kernelscope run`` states it."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO, env_without_color
from kernelscope import load
from kernelscope.model import FrameKind

FIXTURES = REPO / "tests" / "fixtures"
pytest.importorskip("torch")
pytestmark = pytest.mark.slow


def run(program: str, out: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(FIXTURES / program), out],
        cwd=cwd,
        env=env_without_color() | env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def modules(profile: Any) -> set[str]:
    return {profile.frame_of(n).name for n in range(len(profile)) if profile.frame_of(n).kind is FrameKind.MODULE}


@pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason="no transformers")
def test_transformers_trainer_callback(tmp_path: Path) -> None:
    pytest.importorskip("accelerate")
    r = run("hf_trainer.py", "hf.ksprof", tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "trained 6 steps" in r.stdout
    assert r.stderr.count("kernelscope: profile saved to hf.ksprof") == 1
    p = load(str(tmp_path / "hf.ksprof"))
    cov = p.metadata["coverage"]
    assert (cov["steps"], cov["recorded_steps"], cov["step_source"]) == (6, 6, "explicit")
    assert p.metadata["trainer"] == "transformers.Trainer"
    assert {"transformer.h.0.attn", "transformer.h.1.mlp.c_fc", "lm_head"} <= modules(p)


@pytest.mark.skipif(importlib.util.find_spec("lightning") is None, reason="no lightning")
def test_lightning_profiler(tmp_path: Path) -> None:
    r = run("lightning_fit.py", "fit.ksprof", tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "fitted 8 steps" in r.stdout
    assert r.stderr.count("kernelscope: profile saved to fit.ksprof") == 1
    p = load(str(tmp_path / "fit.ksprof"))
    cov = p.metadata["coverage"]
    assert (cov["steps"], cov["recorded_steps"], cov["step_source"]) == (8, 8, "explicit")
    # (training_step calls self.net, not the LightningModule: paths start at the Sequential)
    assert {"Sequential", "0", "2"} <= modules(p)
    # as one rank of an MPI job: its own profile in the job's folder
    r = run("lightning_fit.py", "fit.ksprof", tmp_path, OMPI_COMM_WORLD_RANK="1", OMPI_COMM_WORLD_SIZE="2")
    assert r.returncode == 0, r.stderr[-3000:]
    meta = load(str(tmp_path / "fit.ranks" / "fit.rank1.ksprof")).metadata
    assert (meta["rank"], meta["world_size"], meta["launcher"]) == (1, 2, "mpi")
