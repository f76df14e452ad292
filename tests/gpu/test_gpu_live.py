"""Live recording on a CUDA device (skipped without one; run with ``bash tests/gpu/run.sh`` on a lent GPU).

CUDA kernels joined to their ops and the program's lines, a compiled model's Triton kernels on the lines
they fused, CUDA-graph replays, and the op counts of complete recording against torch's own.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kernelscope import load
from kernelscope.model import FrameKind

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device (bash tests/gpu/run.sh on a lent GPU)"),
]
HERE = Path(__file__).parent
PROGRAMS = HERE / "programs.py"


def run(which: str, tmp: Path, *extra: str) -> object:
    out = tmp / f"{which}.ksprof"
    r = subprocess.run(
        [sys.executable, "-m", "kernelscope", "run", "--no-view", *extra, "-o", str(out), str(PROGRAMS), which],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return load(str(out))


def kernels_on_lines(profile: object) -> dict[int, float]:
    """Device kernel time per line of programs.py."""
    out: dict[int, float] = {}
    times = profile.exclusive("time_ns")  # type: ignore[attr-defined]
    for n in range(1, len(profile)):  # type: ignore[arg-type]
        f = profile.frame_of(n)  # type: ignore[attr-defined]
        if f.kind is not FrameKind.KERNEL or f.device == "cpu":
            continue
        line = next(
            (
                p.line
                for p in reversed(profile.path(n))
                if p.kind is FrameKind.PYTHON and p.file.endswith("programs.py")
            ),  # type: ignore[attr-defined]
            None,
        )
        if line is not None:
            out[line] = out.get(line, 0.0) + float(times[n])
    return out


LOSS_LINE = next(i for i, text in enumerate(PROGRAMS.read_text().splitlines(), 1) if "the line the kernels" in text)


def test_cuda_kernels_join_their_ops_and_the_line_that_issued_them(tmp_path: Path) -> None:
    p = run("eager", tmp_path, "--max-overhead", "0")
    assert p.metadata.get("device_run") is True  # type: ignore[attr-defined]
    by_line = kernels_on_lines(p)
    total = sum(by_line.values())
    assert total > 0 and by_line.get(LOSS_LINE, 0.0) > 0.3 * total  # forward and backward of the model


def test_compiled_triton_kernels_land_on_the_lines_they_fused(tmp_path: Path) -> None:
    p = run("compiled", tmp_path, "--max-overhead", "0")
    names = [p.frame_of(n).name for n in range(1, len(p)) if p.frame_of(n).kind is FrameKind.KERNEL]  # type: ignore[attr-defined]
    assert any(name.startswith("triton_") for name in names)
    assert kernels_on_lines(p).get(LOSS_LINE, 0.0) > 0


def test_cuda_graph_replays_are_recorded(tmp_path: Path) -> None:
    p = run("cudagraph", tmp_path, "--max-overhead", "0")
    assert sum(kernels_on_lines(p).values()) > 0
