"""kernelscope triton: real kernels on the Triton interpreter, checked against hand computation."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest.importorskip("triton")

from kernelscope.cli.main import main
from kernelscope.collect.triton.inspector import InspectRun, inspect_script
from kernelscope.collect.triton.report import to_json

SCRIPT = Path(__file__).resolve().parents[1] / "examples" / "triton_kernels.py"
SOURCE = SCRIPT.read_text().splitlines()


def line_of(text: str, after: str = "") -> int:
    """1-based line of the first source line containing ``text`` after the line containing ``after``."""
    start = next(i for i, s in enumerate(SOURCE) if after in s) if after else 0
    return next(i for i, s in enumerate(SOURCE[start:], start) if text in s) + 1


@pytest.fixture(scope="module")
def run() -> InspectRun:
    return inspect_script(str(SCRIPT), [], write_maps=True)


def lines_of(run: InspectRun, kernel: str) -> dict[tuple[int, str], object]:
    return {(s.line, s.op): s for s in run.report.lines if s.kernel == kernel}


def problems_of(run: InspectRun, kernel: str) -> list[tuple[str, int, tuple[int, int, int], str | None]]:
    return sorted((p.kind, p.line, p.program_id, p.arg) for p in run.report.problems if p.kernel == kernel)


def test_launches_are_placed_at_their_user_lines(run: InspectRun) -> None:
    got = [(la.kernel, la.grid, la.line, la.programs) for la in run.report.launches]
    assert got == [
        ("add_kernel", (4, 1, 1), line_of("add_kernel[("), 4),
        ("rows_kernel", (3, 1, 1), line_of("rows_kernel[("), 3),
        ("matmul_kernel", (3, 2, 1), line_of("matmul_kernel[("), 6),
        ("oob_kernel", (4, 1, 1), line_of("oob_kernel[("), 4),
        ("race_kernel", (4, 1, 1), line_of("race_kernel[("), 4),
        ("strided_kernel", (4, 1, 1), line_of("strided_kernel[("), 4),
        ("sum_kernel", (4, 1, 1), line_of("sum_kernel[("), 4),
    ]
    assert all(os.path.samefile(la.file, SCRIPT) for la in run.report.launches)
    assert run.outcome.exit_code == 0


def test_vector_add_bytes_and_masked_fraction(run: InspectRun) -> None:
    # n = 1000 float32 in 4 programs of 256 lanes: 1000 lanes pass the mask, 24 of 1024 are masked off
    lines = lines_of(run, "add_kernel")
    after = "def add_kernel"
    expected = {
        (line_of("tl.load(x_ptr", after), "load"),
        (line_of("tl.load(y_ptr", after), "load"),
        (line_of("tl.store(out_ptr", after), "store"),
    }
    assert set(lines) == expected
    for stat in lines.values():
        assert (stat.bytes, stat.elements, stat.lanes, stat.count) == (4000, 1000, 1024, 4)  # type: ignore[attr-defined]
        assert stat.masked_fraction == pytest.approx(24 / 1024)  # type: ignore[attr-defined]


def test_masked_2d_rows(run: InspectRun) -> None:
    # 10×100 float32, blocks of 4 rows × 128 columns, 3 programs: 1536 lanes, 1000 pass the mask
    lines = lines_of(run, "rows_kernel")
    load = lines[(line_of("tl.load(x_ptr", "def rows_kernel"), "load")]
    store = lines[(line_of("tl.store(out_ptr", "def rows_kernel"), "store")]
    for stat in (load, store):
        assert (stat.bytes, stat.elements, stat.lanes) == (4000, 1000, 1536)  # type: ignore[attr-defined]
        assert stat.masked_fraction == pytest.approx(536 / 1536)  # type: ignore[attr-defined]


def test_tiled_matmul_lines_and_dot_shapes(run: InspectRun) -> None:
    # 48×64 @ 64×32 in 16×16 tiles (6 programs), K in 2 steps of 32
    lines = lines_of(run, "matmul_kernel")
    after = "def matmul_kernel"
    a = lines[(line_of("a = tl.load", after), "load")]
    b = lines[(line_of("b = tl.load", after), "load")]
    dot = lines[(line_of("tl.dot", after), "dot")]
    c = lines[(line_of("tl.store", after), "store")]
    assert (a.elements, a.bytes, a.masked_fraction) == (6 * 2 * 16 * 32, 6 * 2 * 16 * 32 * 4, 0.0)  # type: ignore[attr-defined]
    assert (b.elements, b.bytes) == (6 * 2 * 32 * 16, 6 * 2 * 32 * 16 * 4)  # type: ignore[attr-defined]
    assert (dot.dot_shapes, dot.count, dot.flops) == (((16, 16, 32),), 12, 12 * 2 * 16 * 16 * 32)  # type: ignore[attr-defined]
    assert (c.elements, c.bytes) == (48 * 32, 48 * 32 * 4)  # type: ignore[attr-defined]


def test_correct_kernels_report_nothing(run: InspectRun) -> None:
    for kernel in ("add_kernel", "rows_kernel", "matmul_kernel", "sum_kernel"):
        assert problems_of(run, kernel) == []


def test_atomics_are_recorded_and_are_not_races(run: InspectRun) -> None:
    # four programs each add one float32 to out[0]
    atomic = lines_of(run, "sum_kernel")[(line_of("tl.atomic_add", "def sum_kernel"), "atomic")]
    assert (atomic.elements, atomic.bytes, atomic.count) == (4, 16, 4)  # type: ignore[attr-defined]


def test_off_by_one_is_out_of_bounds_at_its_line_and_program(run: InspectRun) -> None:
    after = "def oob_kernel"
    assert problems_of(run, "oob_kernel") == [
        ("out_of_bounds", line_of("tl.load(x_ptr", after), (3, 0, 0), "x_ptr"),
        ("out_of_bounds", line_of("tl.store(out_ptr", after), (3, 0, 0), "out_ptr"),
    ]
    detail = next(p.detail for p in run.report.problems if p.kernel == "oob_kernel")
    assert "1 element(s)" in detail and "element 1000" in detail
    # the element past the end was counted as accessed (the program asked for it)
    load = lines_of(run, "oob_kernel")[(line_of("tl.load(x_ptr", after), "load")]
    assert load.elements == 1001  # type: ignore[attr-defined]


def test_planted_race_is_reported(run: InspectRun) -> None:
    # programs of 32 lanes start 31 apart: elements 31, 62 and 93 are stored by two programs
    line = line_of("tl.store(out_ptr", "def race_kernel")
    assert problems_of(run, "race_kernel") == [("race", line, (1, 0, 0), "out_ptr")]
    detail = next(p.detail for p in run.report.problems if p.kernel == "race_kernel")
    assert detail.startswith("3 element(s) of out_ptr") and "element 31 by programs (0,0,0) and (1,0,0)" in detail


def test_strided_load_is_uncoalesced_and_its_store_is_not(run: InspectRun) -> None:
    assert problems_of(run, "strided_kernel") == [
        ("uncoalesced", line_of("tl.load(x_ptr", "def strided_kernel"), (0, 0, 0), "x_ptr")
    ]
    detail = next(p.detail for p in run.report.problems if p.kernel == "strided_kernel")
    assert "256 32-byte sectors" in detail and "needs 64" in detail  # stride 4 float32: 2 of 8 per sector


def test_write_map_shows_which_program_stored_each_element(run: InspectRun) -> None:
    (wm,) = [w for w in run.report.write_maps if w.kernel == "race_kernel" and w.arg == "out_ptr"]
    assert wm.shape == (100,) and len(wm.owner) == 100
    assert wm.owner[:31] == (0,) * 31 and wm.owner[31] == 1 and wm.owner[62] == 2 and wm.owner[99] == 3


def test_json_schema(run: InspectRun) -> None:
    doc = to_json(run.report)
    assert doc["schema"] == 1
    assert set(doc) == {"schema", "launches", "lines", "problems", "write_maps"}
    assert all(set(la) == {"kernel", "grid", "file", "line", "programs", "called_from"} for la in doc["launches"])
    base = {"kernel", "file", "line", "op", "bytes", "elements", "masked_fraction"}
    assert all(set(row) == base | ({"dot_shapes", "flops"} if row["op"] == "dot" else set()) for row in doc["lines"])
    assert all(set(p) == {"kind", "kernel", "file", "line", "program_id", "arg", "detail"} for p in doc["problems"])
    assert {p["kind"] for p in doc["problems"]} == {"out_of_bounds", "race", "uncoalesced"}
    json.dumps(doc, allow_nan=False)


def test_interpreter_is_left_as_found(run: InspectRun) -> None:
    from triton.runtime import interpreter

    patched = {"create_masked_load", "create_masked_store", "create_dot", "create_addptr", "set_grid_dim"}
    assert not patched & set(vars(interpreter.interpreter_builder))
    assert interpreter.GridExecutor.__call__.__module__ == "triton.runtime.interpreter"
    assert interpreter._implicit_cvt.__module__ == "triton.runtime.interpreter"
    assert interpreter.InterpretedFunction.run.__module__ == "triton.runtime.interpreter"


def test_cli_json_and_profile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "add.ksprof"
    assert main(["triton", "--json", "-o", str(out), str(SCRIPT), "add"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [la["kernel"] for la in doc["launches"]] == ["add_kernel"] and doc["problems"] == []
    assert "write_maps" not in doc

    from kernelscope.model import FrameKind, load

    profile = load(str(out))
    profile.check()
    (k,) = [n for n in range(len(profile)) if profile.frame_of(n).kind is FrameKind.KERNEL]
    kernel, caller = profile.frame_of(k), profile.frame_of(int(profile.parent[k]))
    # named and measured as the kernel's launch_metadata callback says (Proton's convention)
    assert kernel.name == "vec_add n=1000"
    assert (caller.kind, caller.line, caller.name) == (FrameKind.PYTHON, line_of("add_kernel[("), "add")
    assert profile.exclusive("flops")[k] == 1000 and profile.exclusive("bytes")[k] == 12000
    assert profile.exclusive("count")[k] == 1 and profile.exclusive("time_ns")[k] > 0


def test_cli_text_summary(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["triton", str(SCRIPT), "oob"]) == 0
    text = capsys.readouterr().out
    assert "oob_kernel" in text and "out_of_bounds" in text and "program (3,0,0)" in text


def test_missing_script_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["triton", "no/such/script.py"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such file" in err


def test_triton_too_old_is_one_line_exit_2(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import triton

    monkeypatch.setattr(triton, "__version__", "3.7.1")
    assert main(["triton", str(SCRIPT), "add"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Triton 3.7.1 is too old" in err


def test_interpreter_without_the_internals_is_one_line_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from triton.runtime import interpreter

    monkeypatch.delattr(interpreter.GridExecutor, "_init_args_hst")
    assert main(["triton", str(SCRIPT), "add"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot drive this version" in err


def test_triton_not_installed_is_one_line_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "triton", None)  # import triton -> ImportError
    assert main(["triton", str(SCRIPT), "add"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'kernelscope[triton]'" in err
