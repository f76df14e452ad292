"""A line's calls do not depend on where windows turn over: the README example folded in dozens of windows gives
each line the calls one window around the run gives (collect/torch_events.py ``_line_run``: a frame that runs
on into a window goes on with its own run, not with that of another function of the same name)."""

from __future__ import annotations

import runpy
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2]) < (2, 8),
        reason="torch 2.5's Python tracer cannot post-process this harness's training window ('Python replay "
        "stack is empty', profiler_python.cpp): the window is lost, and the profile's warning says so",
    ),
]

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "tiny_transformer.py"


def _lines(fold_seconds: float, monkeypatch: pytest.MonkeyPatch) -> tuple[Counter[int], int]:
    import kernelscope

    monkeypatch.setattr(sys, "argv", [str(EXAMPLE), "--steps", "5"])
    with kernelscope.profile(compile_capture=False, max_overhead=0, fold_seconds=fold_seconds, fold="inline") as p:
        runpy.run_path(str(EXAMPLE), run_name="__main__")
    profile: Any = p.result
    count = profile.exclusive("count")
    lines: Counter[int] = Counter()
    for n in range(1, len(profile)):
        f = profile.frame_of(n)
        if f.kind.value == "python" and f.file.endswith("tiny_transformer.py"):
            lines[f.line] += int(count[n])
    return lines, len(profile.metadata["recording"]["own_ns"])


def test_line_calls_do_not_depend_on_the_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    one, _ = _lines(60.0, monkeypatch)
    many, windows = _lines(0.003, monkeypatch)
    assert windows > 15
    # (line 41 calls two Linear layers: a repeated callee starts a new run, so where a window falls between them
    # decides whether it is one run or two; every other line calls distinct callees)
    for line in [k for k in one if k != 41]:
        assert many[line] == one[line], (line, many[line], one[line])
    assert one[71] == 10  # (the loop over 2 blocks, 5 steps)
