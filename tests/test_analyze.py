"""The analyze verb and the torch.compile rules, from literal profiles; end to end on a planted fixture."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO, build, env_without_color
from kernelscope.analysis.advisor import Finding, Severity, rules, run_rules
from kernelscope.cli.main import main
from kernelscope.model import Frame
from kernelscope.render.console import make_console
from kernelscope.render.findings_text import render_findings

FIXTURE = REPO / "tests" / "fixtures" / "compile_break_recompile.py"

COMPILE_META: dict[str, Any] = {
    "schema": 1,
    "provenance": True,
    "warnings": [],
    "graph_breaks": [
        {
            "reason": "Failed to trace builtin operator: Dynamo does not know how to trace builtin operator `print`",
            "type": "Failed to trace builtin operator",
            "file": "train.py",
            "line": 18,
            "function": "step",
            "compile_id": "0/0",
            "count": 1,
        }
    ],
    "recompiles": [
        {
            "reason": "scale == 0.5",
            "guard": "value",
            "guard_file": "train.py",
            "guard_line": 17,
            "function": "step",
            "def_file": "train.py",
            "def_line": 15,
            "file": "train.py",
            "line": 27,
            "compile_id": "0/1",
        }
    ],
    "compiles": [
        {
            "compile_id": "0/0",
            "function": "step",
            "code_name": "step",
            "file": "train.py",
            "line": 15,
            "compile_time_s": 2.5,
            "graph_ops": 3,
        },
        {
            "compile_id": "0/1",
            "function": "step",
            "code_name": "step",
            "file": "train.py",
            "line": 15,
            "compile_time_s": 0.75,
            "graph_ops": 3,
        },
    ],
    "frames": [
        {
            "function": "step",
            "file": "train.py",
            "line": 15,
            "graphs": 2,
            "compiles": 3,
            "compile_time_s": 3.5,
            "graph_breaks": 1,
        }
    ],
    "graphs": [],
    "runtime": {
        "entry_ns": 10e6,
        "graph_ns": 6e6,
        "backward_graph_ns": 0.0,
        "eager_island_ns": 2e6,
        "backward_ns": 0.0,
        "entries": 5,
    },
}


def compiled_profile(meta: dict[str, Any] | None = None) -> Any:
    return build(
        [([Frame.python("train.py", 27, "main"), Frame.op("aten::add")], {"time_ns": 1e6})],
        {"compile": meta or COMPILE_META},
    )


def test_rules_are_registered_one_module_each() -> None:
    assert {"graph_break", "recompile", "compile_time"} <= {r.name for r in rules()}


def test_compile_findings_name_the_lines() -> None:
    findings = run_rules(compiled_profile())
    by_rule = {f.rule: f for f in findings if f.rule not in ("compile_time", "eager_islands")}
    gb = by_rule["graph_break"]
    assert (gb.file, gb.line, gb.severity) == ("train.py", 18, Severity.WARNING)
    assert "print" in gb.evidence and "2 graphs" in gb.evidence
    rc = by_rule["recompile"]
    assert (rc.file, rc.line) == ("train.py", 27)
    assert "scale == 0.5" in rc.evidence and "train.py:17" in rc.evidence
    assert rc.title == "Recompiled step (value guard failed)"
    assert rc.estimated_saving_ms == 750.0
    compile_time = [f for f in findings if f.rule == "compile_time"]
    assert [f.title for f in compile_time] == ["Compiling step took 3.5 s"]
    islands = [f for f in findings if f.rule == "eager_islands"]  # a rule of its own, not compile time
    assert [f.title for f in islands] == ["20% of the time in compiled calls is eager code between graphs"]
    assert islands[0].severity is Severity.WARNING and islands[0].estimated_saving_ms == 2.0


def test_no_compile_metadata_no_findings() -> None:
    assert run_rules(build([([Frame.op("aten::add")], {"time_ns": 1.0})])) == []


def test_imported_trace_regions_reveal_breaks_and_recompiles() -> None:
    line = Frame.python("train.py", 5, "main")
    outer = Frame.region("Torch-Compiled Region", "0/0")
    profile = build(
        [
            ([line, outer, Frame.region("Torch-Compiled Region", "1/0"), Frame.op("aten::mm")], {"time_ns": 1.0}),
            ([line, outer, Frame.region("Torch-Compiled Region", "1/1"), Frame.op("aten::mm")], {"time_ns": 1.0}),
        ]
    )
    findings = run_rules(profile)
    assert [(f.rule, f.title) for f in findings] == [
        ("graph_break", "Compiled regions nest: 2 compiled frames, graph breaks likely"),
        ("recompile", "Compiled frame 1 ran 2 different compilations"),
    ]


def test_json_output_follows_the_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "p.ksprof"
    compiled_profile().save(str(path))
    assert main(["analyze", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == 1
    keys = {"rule", "severity", "title", "evidence", "file", "line", "module", "estimated_saving_ms"}
    keys |= {"saving_method", "fix", "occurrences", "nodes"}  # additive to schema 1
    for f in doc["findings"]:
        assert {"rule", "severity", "title", "evidence"} <= set(f) <= keys
        assert f["severity"] in {"info", "warning", "error"}
    assert [f["rule"] for f in doc["findings"]][:3] == ["recompile", "eager_islands", "graph_break"]


def test_bad_input_and_unknown_rule_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(tmp_path / "missing.ksprof")]) == 2
    path = tmp_path / "p.ksprof"
    compiled_profile().save(str(path))
    assert main(["analyze", str(path), "--rule", "nope"]) == 2
    err = capsys.readouterr().err
    assert "unknown rule nope" in err and "Traceback" not in err


def test_text_rendering_is_plain_without_color_and_escapes_markup() -> None:
    out = io.StringIO()
    hostile = Finding("graph_break", Severity.WARNING, "[bold]</script>&", "x" * 300, file="a[b].py", line=3)
    render_findings(make_console(out, width=100), [hostile])
    text = out.getvalue()
    assert "\x1b[" not in text
    assert "[bold]</script>&" in text and "a[b].py:3" in text


@pytest.mark.slow
def test_end_to_end_planted_break_and_recompile(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    out = tmp_path / "fixture.ksprof"
    env = env_without_color()
    run = subprocess.run(
        [sys.executable, "-m", "kernelscope", "run", "--no-view", "--max-overhead", "0", "-o", str(out), str(FIXTURE)],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=600, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    done = subprocess.run(
        [sys.executable, "-m", "kernelscope", "analyze", str(out), "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    findings = json.loads(done.stdout)["findings"]
    fixture = os.path.relpath(FIXTURE, REPO)
    lines = {
        n: i
        for i, text in enumerate(FIXTURE.read_text().splitlines(), 1)
        for n in ("print(", "step(x, 0.25)")
        if n in text
    }
    breaks = [f for f in findings if f["rule"] == "graph_break"]
    recompiles = [f for f in findings if f["rule"] == "recompile"]
    assert [(f["file"], f["line"]) for f in breaks] == [(fixture, lines["print("])]
    assert [(f["file"], f["line"]) for f in recompiles] == [(fixture, lines["step(x, 0.25)"])]
    assert "scale == 0.5" in recompiles[0]["evidence"]
