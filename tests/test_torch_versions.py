"""What the installed torch gives a live run, observed: docs/run.md's version table is these tests' output.

Two real programs under ``kernelscope run``: a compiled function with a planted graph break and recompile
(tests/fixtures/compile_break_recompile.py) and a program that runs ops on a thread it starts
(tests/live_matrix/threads.py). Whatever the version offers, the program's output and exit code are its own,
and what a version lacks is said once on stderr. The row observed here must be in docs/run.md's table; CI runs
this file on the oldest and the newest torch of the supported range as well as on the pinned one.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from conftest import REPO, env_without_color
from kernelscope import load
from kernelscope.model import FrameKind

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.slow

DOC = REPO / "docs" / "run.md"
COMPILED = REPO / "tests" / "fixtures" / "compile_break_recompile.py"
THREADS = REPO / "tests" / "live_matrix" / "threads.py"


def run(program: Path, out: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "kernelscope", "run", "--no-view", "--max-overhead", "0", "-o", str(out), str(program)]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env_without_color(), timeout=600)


def plain(program: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(program)], capture_output=True, text=True, cwd=cwd, env=env_without_color(), timeout=600
    )


def yes(flag: bool) -> str:
    return "yes" if flag else "no"


def op_calls(path: Path, op: str) -> int:
    profile = load(str(path))
    col = profile.exclusive("count")
    calls = 0.0
    for n in range(1, len(profile)):
        frame = profile.frame_of(n)
        if frame.kind is FrameKind.OP and frame.name == op:
            calls += float(col[n])
    return int(calls)


def kernelscope_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("kernelscope: warning:")]


@pytest.fixture(scope="module")
def observed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bool]:
    tmp = tmp_path_factory.mktemp("versions")
    # the compiled program: same output and exit code alone and under kernelscope, every note said once
    alone = plain(COMPILED, tmp)
    under = run(COMPILED, tmp / "c.ksprof", tmp)
    assert under.returncode == alone.returncode == 0, under.stderr[-3000:]
    assert under.stdout == alone.stdout
    assert "Traceback" not in under.stderr, under.stderr[-3000:]
    notes = Counter(kernelscope_lines(under.stderr))
    assert all(n == 1 for n in notes.values()), notes
    compile_doc = load(str(tmp / "c.ksprof")).metadata.get("compile") or {}
    # the program's own thread: 50 forward calls there, 10 forward + backward on the main thread
    (tmp / "_common.py").write_text((THREADS.parent / "_common.py").read_text())
    threads = run(THREADS, tmp / "t.ksprof", tmp)
    assert threads.returncode == 0, threads.stderr[-3000:]
    assert "threads done" in threads.stdout
    addmm = op_calls(tmp / "t.ksprof", "aten::addmm")
    assert addmm >= 10
    recorded_threads = addmm >= 60
    thread_notes = Counter(line for line in kernelscope_lines(threads.stderr) if "other Python thread(s)" in line)
    assert all(n == 1 for n in thread_notes.values()), thread_notes
    return {
        "threads": recorded_threads,
        "thread_note": bool(thread_notes),
        "provenance": compile_doc.get("provenance") is True,
        "graph_breaks": bool(compile_doc.get("graph_breaks")),
        "recompiles": bool(compile_doc.get("recompiles")),
        "notes": bool(notes),
    }


def version_row(observed: dict[str, bool]) -> str:
    major, minor = (int(p) for p in re.findall(r"\d+", torch.__version__)[:2])
    cells = [f"{major}.{minor}"] + [yes(observed[k]) for k in ("threads", "provenance", "graph_breaks", "recompiles")]
    return "| " + " | ".join(cells) + " |"


def test_docs_table_states_what_this_torch_gives(observed: dict[str, bool]) -> None:
    row = version_row(observed)
    assert row in DOC.read_text(), f"docs/run.md's torch table lacks the row this torch gives: {row}"


def test_what_a_version_lacks_is_said(observed: dict[str, bool]) -> None:
    if not (observed["provenance"] and observed["graph_breaks"] and observed["recompiles"]):
        assert observed["notes"], "a compile hook was left off without a word"
    # the program's own thread: recorded (nothing to say), or not recorded and said once, with torch's reason
    assert observed["thread_note"] != observed["threads"], observed
