"""Live JAX profiling of a jitted MLP train step on CPU (the issue's floor), checked against the raw XPlane."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from kernelscope.analysis.views import group
from kernelscope.collect.jax_live import uses_jax
from kernelscope.model import FrameKind, Profile, load

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "jax_mlp_train.py"


def test_uses_jax_detects_the_framework(tmp_path: Path) -> None:
    assert uses_jax(str(EXAMPLE))
    assert not uses_jax(str(REPO / "examples" / "compiled_mlp.py"))
    both = tmp_path / "both.py"
    both.write_text("import torch\nfrom jax import numpy as jnp\n")
    assert not uses_jax(str(both))
    assert not uses_jax(str(tmp_path / "missing.py"))
    assert uses_jax("json") is False


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> tuple[Profile, Path]:
    pytest.importorskip("jax")
    out = tmp_path_factory.mktemp("jaxlive")
    code = (
        "import sys\n"
        "from kernelscope.collect.jax_live import profile_script\n"
        f"p, outcome = profile_script({str(EXAMPLE)!r}, ['3'], keep_xplane={str(out / 'run.xplane.pb')!r})\n"
        f"p.save({str(out / 'run.ksprof')!r})\n"
        "sys.exit(outcome.exit_code)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return load(str(out / "run.ksprof")), out / "run.xplane.pb"


def _layer_lines() -> list[int]:
    """The lines of ``mlp`` that call each dense layer."""
    text = EXAMPLE.read_text().splitlines()
    return [i for i, line in enumerate(text, 1) if "dense(layers[" in line]


@pytest.mark.slow
def test_op_time_is_on_user_lines(live: tuple[Profile, Path]) -> None:
    p, _ = live
    p.check()
    rows = dict(group(p, "line").rows)
    total = p.total("time_ns")
    unattributed = rows.get(None, {}).get("time_ns", 0.0)
    assert total > 0
    assert unattributed / total <= 0.05
    assert p.metadata["framework"] == "jax" and p.metadata["exit_code"] == 0


@pytest.mark.slow
def test_each_dense_layer_line_carries_its_forward_and_backward(live: tuple[Profile, Path]) -> None:
    p, _ = live
    example = os.path.relpath(EXAMPLE, REPO)
    lines = _layer_lines()
    assert len(lines) == 3
    for line in lines:
        nodes = [n for n in range(len(p)) if p.frame_of(n).kind is FrameKind.PYTHON and p.frame_of(n).line == line]
        assert nodes, line
        assert {p.frame_of(n).file for n in nodes} == {example}
        forward = backward = 0.0
        inc = p.inclusive("time_ns")
        for node in range(len(p)):
            f = p.frame_of(node)
            if f.kind is not FrameKind.OP or f.name not in ("dot_general", "transpose"):
                continue
            path = p.path(node)
            if not any(x.kind is FrameKind.PYTHON and x.line == line and x.file == example for x in path):
                continue
            if any(x.kind is FrameKind.BACKWARD for x in path):
                backward += float(inc[node])
            else:
                forward += float(inc[node])
        assert forward > 0 and backward > 0, (line, forward, backward)


@pytest.mark.slow
def test_fusion_parts_sum_exactly_and_kernels_match_the_raw_xplane(live: tuple[Profile, Path]) -> None:
    from jax.profiler import ProfileData

    p, xplane = live
    time = p.exclusive("time_ns")
    inc = p.inclusive("time_ns")
    split = 0
    ours: dict[str, float] = defaultdict(float)
    for node in range(len(p)):
        f = p.frame_of(node)
        if f.kind is not FrameKind.KERNEL:
            continue
        parts = p.children[node]
        if parts:
            split += 1
            assert all(p.frame_of(k).kind is FrameKind.PART for k in parts)
            assert time[node] == 0
            assert sum(float(time[k]) for k in parts) == float(inc[node])
        if any(x.kind is FrameKind.REGION and x.name == "jit(train_step)" for x in p.path(node)):
            ours[f.name] += float(inc[node])
    assert split >= 2  # the MLP's bias-add+relu fusions join ops of two lines
    theirs: dict[str, float] = defaultdict(float)
    for plane in ProfileData.from_file(str(xplane)).planes:
        for line in plane.lines:
            for ev in line.events:
                stats = dict(ev.stats)
                if stats.get("hlo_module") == "jit_train_step" and "hlo_op" in stats:
                    theirs[str(stats["hlo_op"])] += ev.duration_ns
    assert ours.keys() == theirs.keys()
    for name, t in theirs.items():
        assert ours[name] == pytest.approx(t, rel=1e-9, abs=1e-3), name


@pytest.mark.slow
def test_the_kept_xplane_imports_from_the_cli(live: tuple[Profile, Path], tmp_path: Path) -> None:
    from kernelscope.cli.main import main

    _, xplane = live
    out = tmp_path / "imported.ksprof"
    assert main(["import", str(xplane), "-o", str(out)]) == 0
    imported = load(str(out))
    assert imported.total("time_ns") == pytest.approx(live[0].total("time_ns"))


@pytest.mark.slow
def test_a_failing_program_and_one_that_runs_nothing_still_give_profiles(tmp_path: Path) -> None:
    pytest.importorskip("jax")
    fails = tmp_path / "fails.py"
    fails.write_text("import jax\nimport jax.numpy as jnp\njax.jit(lambda x: x * 2)(jnp.ones(8)).block_until_ready()\n"
                     "raise ValueError('boom')\n")  # fmt: skip
    idle = tmp_path / "idle.py"
    idle.write_text("import jax\nprint('nothing to do')\n")
    code = (
        "import sys\n"
        "from kernelscope.collect.jax_live import profile_script\n"
        "for target in sys.argv[1:]:\n"
        "    p, outcome = profile_script(target, [])\n"
        "    p.check()\n"
        "    print('RESULT', outcome.exit_code, int(p.total('time_ns') > 0), p.metadata.get('warnings', []))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "JAX_PLATFORMS": "cpu"}
    done = subprocess.run(
        [sys.executable, "-c", code, str(fails), str(idle)], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    results = [line.split(" ", 3) for line in done.stdout.splitlines() if line.startswith("RESULT")]
    assert results[0][1:3] == ["1", "1"]  # the traceback is the program's; its jitted op was recorded
    assert "ValueError: boom" in done.stderr
    assert results[1][1:3] == ["0", "0"] and "no JAX work was recorded" in results[1][3]
