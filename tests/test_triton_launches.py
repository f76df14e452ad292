"""Launch hooks (Proton's convention) and the inspector's analysis and renderer on literal records."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest

from kernelscope.collect.triton.analyze import problems, races, uncoalesced
from kernelscope.collect.triton.launches import LaunchRecorder, metrics_of
from kernelscope.collect.triton.records import ATOMIC, STORE, Access, ArgInfo, Launch
from kernelscope.collect.triton.report import build_report
from kernelscope.model import Frame, FrameKind, ProfileBuilder
from kernelscope.render.console import make_console
from kernelscope.render.triton_text import render_triton

OUT = ArgInfo("out", base=4096, storage_lo=4096, storage_hi=4096 + 400, itemsize=4, shape=(100,), dtype="float32")


def launch(kernel: str = "k", grid: tuple[int, int, int] = (4, 1, 1)) -> Launch:
    return Launch(0, kernel, "k.py", "main.py", 7, grid, (OUT,))


def store(pid: int, elements: list[int], op: str = STORE, line: int = 3) -> Access:
    e = np.asarray(elements, dtype=np.int64)
    return Access(0, (pid, 0, 0), op, "k.py", line, "out", 4, e.size, e.size, elements=e)


def test_metrics_follow_proton() -> None:
    data = {"name": "n", "function": object(), "stream": 7, "flops16": 10, "bytes": 4.0, "tag": "x", "ok": True}
    assert metrics_of(data) == {"count": 1.0, "flops16": 10.0, "bytes": 4.0}


def test_two_programs_storing_one_element_race_but_not_one_program_twice_nor_atomics() -> None:
    assert races([launch()], [store(0, [1, 2]), store(0, [2, 3]), store(1, [5]), store(2, [9], ATOMIC)]) == []
    (p,) = races([launch()], [store(0, [1, 2]), store(1, [2, 3], line=4), store(3, [3], line=4)])
    assert (p.kind, p.line, p.program_id, p.arg) == ("race", 4, (1, 0, 0), "out")
    assert p.detail.startswith("2 element(s) of out")


def test_race_over_a_whole_tensor_is_one_problem() -> None:
    n = 200_000
    big = ArgInfo("out", 0, 0, 4 * n, 4, (n,), "float32")
    la = Launch(0, "k", "k.py", "main.py", 7, (2, 1, 1), (big,))
    both = [store(0, list(range(n))), store(1, list(range(n - 1, -1, -1)), line=9)]
    (p,) = races([la], both)
    assert (p.line, p.program_id) == (9, (1, 0, 0))
    assert (
        p.detail
        == f"{n} element(s) of out stored by more than one program without atomics; element 0 by programs (0,0,0) and (1,0,0)"
    )


def test_uncoalesced_needs_twice_the_sectors_and_enough_of_them() -> None:
    def load(sectors: int, needed: int) -> Access:
        return Access(0, (0, 0, 0), "load", "k.py", 5, "out", 4, 64, 64, sectors=sectors, min_sectors=needed)

    assert uncoalesced([launch()], [load(8, 8), load(9, 8)]) == []  # contiguous, one misaligned
    assert uncoalesced([launch()], [load(1, 1)]) == []  # a scalar load is not a pattern
    (p,) = uncoalesced([launch()], [load(16, 8)])
    assert (p.kind, p.line, p.arg) == ("uncoalesced", 5, "out") and "50%" in p.detail


def test_hostile_names_render_literally() -> None:
    name = "</script>[bold]&" + "k" * 10_000
    la = Launch(0, name, "k.py", "[red]main.py", 7, (1, 1, 1), (OUT,))
    oob = Access(0, (0, 0, 0), "load", "[x]k.py", 3, "out", 4, 8, 8, oob=1, oob_first=100)
    report = build_report([la], [oob, store(0, [1])])
    buf = io.StringIO()
    render_triton(make_console(buf, width=100), report)
    text = buf.getvalue().replace("\n", "")
    assert "</script>[bold]&kkk" in text and "[red]main.py" in text and "[x]k.py:3" in text
    assert [p.kind for p in problems([la], [oob])] == ["out_of_bounds"]


def test_empty_report_renders() -> None:
    buf = io.StringIO()
    render_triton(make_console(buf, width=80), build_report([], []))
    assert "no Triton kernel ran" in buf.getvalue()


def test_compiled_launch_hook_is_added_beside_users_hook_and_removed() -> None:
    knobs = pytest.importorskip("triton").knobs
    from triton.compiler.compiler import LazyDict

    chain = knobs.runtime.launch_enter_hook
    seen: list[str] = []

    def users_hook(metadata: LazyDict) -> None:
        seen.append(metadata.get()["name"])

    chain.add(users_hook)
    try:
        rec = LaunchRecorder()
        rec.install()
        try:
            assert users_hook in chain.calls and len(chain.calls) >= 2
            # what CompiledKernel.launch_metadata hands the hooks on a GPU: the compiled name,
            # then the kernel's launch_metadata(grid, metadata, args) merged in lazily
            lazy = LazyDict({"name": "matmul_kernel", "function": 0, "stream": 0})
            lazy.add(
                lambda grid, meta, args: {"name": f"matmul {args['M']}", "flops": 2.0 * args["M"] ** 3},
                ((1,), None, {"M": 8}),
            )
            chain(lazy)
        finally:
            rec.remove()
        assert users_hook in chain.calls and rec._on_enter not in chain.calls
    finally:
        chain.remove(users_hook)
    assert seen == ["matmul 8"]
    (r,) = rec.records
    assert r.name == "matmul 8" and r.metrics == {"count": 1.0, "flops": 1024.0}
    assert r.stack and r.stack[-1].name == "test_compiled_launch_hook_is_added_beside_users_hook_and_removed"

    b = ProfileBuilder()
    rec.graft(b)
    p = b.build()
    p.check()
    (k,) = [n for n in range(len(p)) if p.frame_of(n).kind is FrameKind.KERNEL]
    assert p.frame_of(k) == Frame.kernel("matmul 8") and p.frame_of(int(p.parent[k])) == r.stack[-1]


def test_unique_addresses_sorted_or_not() -> None:
    from kernelscope.collect.triton.intercept import _unique

    for a in ([], [5], [1, 1, 2, 3, 3, 3], [9, 2, 2, 7, 1], list(range(0, 64, 4))):
        arr = np.asarray(a, dtype=np.uint64)
        assert _unique(arr).tolist() == np.unique(arr).tolist()


def test_launch_recorder_alone_on_the_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    # what a profiling session (kernelscope run) does; triton is already imported in compiled mode here,
    # so the matmul's tl.zeros also checks that Triton's own helpers run interpreted
    pytest.importorskip("triton")
    from pathlib import Path

    from kernelscope.collect.runner import run_program

    script = Path(__file__).resolve().parents[1] / "examples" / "triton_kernels.py"
    source = script.read_text().splitlines()
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    rec = LaunchRecorder.install_if_available()
    assert rec is not None
    try:
        outcome = run_program(str(script), ["matmul", "add"], is_module=False)
    finally:
        rec.remove()
    assert outcome.exit_code == 0
    assert [r.name for r in rec.records] == ["matmul_kernel", "vec_add n=1000"]
    add = rec.records[1]
    assert add.metrics["flops"] == 1000 and add.metrics["bytes"] == 12000 and add.metrics["time_ns"] > 0
    assert "flops" not in rec.records[0].metrics  # no launch_metadata callback: count and time only
    assert "add_kernel[(" in source[add.stack[-1].line - 1] and add.stack[-1].name == "add"


@pytest.mark.slow
def test_kernelscope_run_puts_proton_named_launches_under_their_line(tmp_path: Any) -> None:
    """Issue 11 floor 2: a kernel with a launch_metadata callback under `kernelscope run` (interpreter)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from kernelscope import load

    pytest.importorskip("torch")
    script = Path(__file__).resolve().parent.parent / "examples" / "triton_kernels.py"
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    r = subprocess.run(
        [sys.executable, "-m", "kernelscope", "run", "--no-view", "-o", "t.ksprof", str(script), "add"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    p = load(str(tmp_path / "t.ksprof"))
    kernels = [n for n in range(1, len(p)) if p.frame_of(n).kind is FrameKind.KERNEL]
    names = {p.frame_of(n).name for n in kernels}
    assert "vec_add n=1000" in names  # the name launch_metadata returned, as Proton shows it
    node = next(n for n in kernels if p.frame_of(n).name == "vec_add n=1000")
    assert p.exclusive("flops")[node] == 1000  # the callback's FLOPs for one launch
    parent = p.frame_of(int(p.parent[node]))
    add_line = next(i for i, t in enumerate(script.read_text().splitlines(), 1) if "add_kernel[(" in t)
    assert parent.kind is FrameKind.PYTHON and parent.line == add_line
