"""The official Triton tutorials 01-03 (adapted, tests/fixtures/adapted/triton_tutorials.py) on the
interpreter: what the profile's time is, the inspector's FLOPs and bytes in the profile, launches from
different lines told apart, a view that never hides its only row."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("triton")

from kernelscope.cli.main import main
from kernelscope.collect.triton.inspector import InspectRun, inspect_script
from kernelscope.model import FrameKind

SCRIPT = Path(__file__).resolve().parent / "fixtures" / "adapted" / "triton_tutorials.py"
SOURCE = SCRIPT.read_text().splitlines()


def marked(name: str) -> int:
    return next(i for i, s in enumerate(SOURCE, 1) if s.rstrip().endswith(f"# <- {name}"))


def called(text: str) -> int:
    """The line in ``__main__`` that calls ``text``."""
    start = next(i for i, s in enumerate(SOURCE) if s.startswith('if __name__ == "__main__"'))
    return next(i for i, s in enumerate(SOURCE[start:], start + 1) if text in s)


@pytest.fixture(scope="module")
def run() -> InspectRun:
    return inspect_script(str(SCRIPT), [])


def test_launches_from_different_lines_are_told_apart(run: InspectRun) -> None:
    adds = [la for la in run.report.launches if la.kernel == "add_kernel"]
    assert [(la.line, [n for _f, n in la.callers]) for la in adds] == [
        (marked("ADD_LAUNCH"), [called("out = add(x, y)")]),
        (marked("ADD_LAUNCH_DIRECT"), []),
    ]
    # in the profile, each launch is its own kernel node under its own lines
    p = run.profile
    kernels = [n for n in range(len(p)) if p.frame_of(n).name == "add_kernel"]
    assert len(kernels) == 2
    parents = {
        tuple(f.line for f in p.path(n) if f.kind is FrameKind.PYTHON and f.file.endswith(SCRIPT.name)) for n in kernels
    }
    assert parents == {(called("out = add(x, y)"), marked("ADD_LAUNCH")), (marked("ADD_LAUNCH_DIRECT"),)}


def test_the_profile_holds_the_inspectors_flops_and_bytes(run: InspectRun) -> None:
    p = run.profile
    by_kernel: dict[str, dict[str, float]] = {}
    for n in range(len(p)):
        f = p.frame_of(n)
        if f.kind is FrameKind.KERNEL:
            acc = by_kernel.setdefault(f.name, {"flops": 0.0, "bytes": 0.0})
            acc["flops"] += float(p.exclusive("flops")[n])
            acc["bytes"] += float(p.exclusive("bytes")[n])
    # 03: 64×64 @ 64×64 in 32×32 tiles (4 programs), K in 2 steps of 32: 2·64·64·64 FLOPs; each program
    # loads its A row panel (32×64) and B column panel (64×32), and C is stored once (float32)
    assert by_kernel["matmul_kernel"] == {"flops": 2 * 64**3, "bytes": (4 * (32 * 64 + 64 * 32) + 64 * 64) * 4}
    # 01 twice: 1000 float32 loaded twice and stored once per launch
    assert by_kernel["add_kernel"] == {"flops": 0.0, "bytes": 2 * 3 * 1000 * 4}
    # 02: 8 rows of 100 float32, loaded and stored once
    assert by_kernel["softmax_kernel"] == {"flops": 0.0, "bytes": 2 * 8 * 100 * 4}
    # the per-line report agrees with the per-launch totals
    assert sum(s.bytes for s in run.report.lines) == sum(v["bytes"] for v in by_kernel.values())


def test_views_say_interpreter_time_and_show_documented_metrics(
    run: InspectRun, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "t.ksprof"
    run.profile.save(str(out))
    assert main(["view", str(out)]) == 0
    header = capsys.readouterr().out
    assert "Triton interpreter wall time per launch" in header and "GPU kernel time" not in header
    assert main(["view", str(out), "--by", "kernel", "-m", "count,flops,bytes"]) == 0
    table = capsys.readouterr().out
    assert "matmul_kernel" in table and "524k" in table and "under the threshold" not in table
    assert main(["view", str(out), "--by", "kernel", "-m", "count"]) == 0
    assert "softmax_kernel" in capsys.readouterr().out
    # by line, with no time column: every launch line with bytes is a row (none is "under the threshold")
    assert main(["view", str(out), "--by", "line", "-m", "count,flops,bytes"]) == 0
    by_line = capsys.readouterr().out
    assert "under the threshold" not in by_line
    for name in ("ADD_LAUNCH", "ADD_LAUNCH_DIRECT", "SOFTMAX_LAUNCH", "MATMUL_LAUNCH"):
        assert f"{SCRIPT.name}:{marked(name)}" in by_line, name
    # a filter that leaves one row: the row is shown whatever the metric
    assert main(["view", str(out), "--by", "kernel", "-m", "count", "--include", "softmax"]) == 0
    only = capsys.readouterr().out
    assert "softmax_kernel" in only and "under the threshold" not in only
