"""Names are inert in the terminal: a trace's op and kernel names carrying escape sequences reach
``view``, ``analyze`` and ``history trend`` as visible escapes, never as the bytes."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from kernelscope.cli.main import main
from kernelscope.trust.text import visible

EVIL_OP = "aten::\x1b[2J\x1b]0;PWNED\x07mm"
EVIL_KERNEL = "gemm\x1b[31m\u202e\x9bkernel\r\n"
# Anything a terminal would act on: ESC, BEL, CR, C1 controls, bidi overrides.
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def test_visible_escapes_controls_and_keeps_the_rest() -> None:
    assert visible("aten::mm") == "aten::mm"
    assert visible(EVIL_OP) == "aten::\\x1b[2J\\x1b]0;PWNED\\x07mm"
    assert visible("a\nb\tc\u202ed\x7f") == "a\\nb\\tc\\u202ed\\x7f"
    assert visible("café ✓ 中") == "café ✓ 中"


def _trace(path: Path, events_per_name: int = 3) -> Path:
    events: list[dict[str, Any]] = []
    for i in range(events_per_name):
        t = i * 100.0
        events += [
            {"ph": "X", "cat": "cpu_op", "name": EVIL_OP, "pid": 1, "tid": 1, "ts": t, "dur": 50,
             "args": {"External id": i}},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t + 1,
             "dur": 5, "args": {"correlation": i}},
            {"ph": "X", "cat": "kernel", "name": EVIL_KERNEL, "pid": 0, "tid": 7, "ts": t + 20, "dur": 10,
             "args": {"device": 0, "stream": 7, "correlation": i}},
        ]  # fmt: skip
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return path


@pytest.fixture
def evil(tmp_path: Path) -> Path:
    return _trace(tmp_path / "evil.json")


def _no_raw(text: str) -> None:
    assert not RAW.search(text), repr(RAW.search(text))


@pytest.mark.parametrize(
    "argv",
    [
        ["view"],
        ["view", "--by", "op"],
        ["view", "--by", "kernel"],
        ["view", "--by", "kernel", "--full-names"],
        ["analyze"],
        ["timeline"],
    ],
)
def test_terminal_views_show_escapes_not_bytes(evil: Path, argv: list[str], capsys: Any) -> None:
    assert main([argv[0], str(evil), *argv[1:]]) == 0
    out, err = capsys.readouterr()
    _no_raw(out)
    _no_raw(err)
    if argv[-1] == "op":
        assert "\\x1b[2J\\x1b]0;PWNED" in out
    if argv[0] == "view" and argv[-1] != "op":
        assert "gemm\\x1b[31m\\u202e\\x9bkernel" in out


def test_history_trend_shows_escapes(evil: Path, tmp_path: Path, capsys: Any) -> None:
    pytest.importorskip("duckdb")
    db = str(tmp_path / "h.duckdb")
    second = _trace(tmp_path / "evil2.json", events_per_name=5)
    assert main(["history", "add", str(evil), "--db", db]) == 0
    assert main(["history", "add", str(second), "--db", db]) == 0
    capsys.readouterr()
    assert main(["history", "trend", "--by", "op", "--db", db]) == 0
    out, err = capsys.readouterr()
    _no_raw(out)
    _no_raw(err)
    assert "\\x1b[2J" in out


def test_error_lines_show_escapes(tmp_path: Path, capsys: Any) -> None:
    assert main(["view", str(tmp_path / "no\x1b]0;PWNED\x07such.json")]) == 2
    err = capsys.readouterr().err
    _no_raw(err)
    assert err.count("\n") == 1 and "\\x1b]0;PWNED\\x07" in err
