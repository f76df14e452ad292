"""A live profile that recorded some of its steps is read as a sample (``analysis.per_step``): ``diff``, its
``--fail-above`` gate, ``history``, the advisor's savings and the report read it per step, and a key that a
sample does not hold is "not in the recorded steps", never a drop of 100%."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO, build, env_without_color
from kernelscope.analysis.advisor import Finding, Severity, per_step_savings, run_rules
from kernelscope.analysis.diff import diff, regressions
from kernelscope.analysis.per_step import NOT_RECORDED, Steps, scale_of, scales_of, series_scale_of
from kernelscope.cli.main import main
from kernelscope.model import Frame, Profile
from kernelscope.render.console import make_console
from kernelscope.render.diff_text import render_diff
from kernelscope.render.report.payload import build_payload

LINE = Frame.python("train.py", 10, "step")
MM = Frame.op("aten::mm")


def coverage(recorded: int, steps: int) -> dict[str, Any]:
    return {"coverage": {"recorded_steps": recorded, "steps": steps, "run_seconds": 1.0, "program_seconds": 1.0}}


def run(modules: dict[str, float], recorded: int | None = None, steps: int | None = None) -> Profile:
    """A run whose modules each spend ``ms`` in one aten::mm per recorded step (``None``: an import)."""
    paths = [
        ([LINE, Frame.module_(m, "Linear"), MM], {"time_ns": ms * 1e6 * (recorded or 1), "count": recorded or 1})
        for m, ms in modules.items()
    ]
    return build(paths, coverage(recorded, steps or recorded) if recorded is not None else {})


def test_scales() -> None:
    assert scale_of(coverage(3, 20)).factor == pytest.approx(1 / 3)
    assert scale_of(coverage(5, 5)).factor == 1.0  # a complete run is read as it is ...
    assert scale_of({}).factor == 1.0 and not scale_of({}).per_step  # ... and so is an import
    assert scale_of(coverage(0, 9)).factor == 1.0  # (no whole step recorded: windows inside a step)
    # compared: per step when either is a sample or they recorded different numbers of steps
    b, n = scales_of(coverage(5, 5), coverage(2, 10))
    assert (b.factor, n.factor) == (pytest.approx(1 / 5), pytest.approx(1 / 2))
    b, n = scales_of(coverage(3, 3), coverage(6, 6))
    assert b.per_step and n.per_step
    b, n = scales_of(coverage(5, 5), coverage(5, 5))
    assert (b.factor, n.factor) == (1.0, 1.0)
    b, n = scales_of({}, coverage(2, 10))  # an import has no steps to divide by: both as recorded
    assert (b.factor, n.factor) == (1.0, 1.0)
    assert series_scale_of(coverage(5, 5)).factor == pytest.approx(1 / 5)
    assert Steps(1, 4).words() == "mean of 1 recorded step of 4"


def test_diff_of_a_complete_run_and_a_sample_compares_per_step() -> None:
    """Base: every one of 4 steps; new: 2 of 10 steps, which do not hold blocks.1 (it ran in other steps)."""
    base = run({"blocks.0": 10.0, "blocks.1": 4.0}, recorded=4)
    new = run({"blocks.0": 10.0, "head": 1.0}, recorded=2, steps=10)
    result = diff(base, new, by="module")
    rows = {r.key: r for r in result.rows}
    assert (rows["blocks.0"].base, rows["blocks.0"].new, rows["blocks.0"].delta) == (10e6, 10e6, 0.0)
    assert rows["blocks.1"].not_recorded == "new" and rows["blocks.1"].delta_pct is None
    assert rows["head"].not_recorded is None and rows["head"].new == 1e6  # (absent from a complete run: new)
    assert result.per_step == "per step (base: mean of 4 recorded steps of 4; new: mean of 2 recorded steps of 10)"
    doc = result.to_json()
    by_key = {r["key"]: r for r in doc["rows"]}
    assert by_key["blocks.1"] == {
        "key": "blocks.1",
        "base": 4.0,
        "new": 0.0,
        "delta": 0.0,
        "delta_pct": None,
        "not_recorded": "new",
    }
    assert doc["per_step"] == result.per_step and doc["total"]["base"] == 14.0 and doc["total"]["new"] == 11.0
    # the gate: the module the sample does not hold is no change; head (new in the sample) still counts
    gate = regressions(result, 5.0)
    assert [r.key for r in gate.rows] == ["head"] and not gate.total_tripped


def test_two_samples_of_different_lengths_compare_per_step() -> None:
    base = run({"blocks.0": 10.0}, recorded=3, steps=30)
    new = run({"blocks.0": 10.0}, recorded=6, steps=30)
    result = diff(base, new, by="module", metric="count")
    assert [(r.key, r.base, r.new) for r in result.rows] == [("blocks.0", 1.0, 1.0)]
    assert not regressions(diff(base, new, by="line"), 1.0).tripped  # (as recorded: +100%)


def test_profiles_without_steps_keep_todays_diff() -> None:
    base, new = run({"blocks.0": 10.0, "blocks.1": 4.0}), run({"blocks.0": 10.0})
    result = diff(base, new, by="module")
    rows = {r.key: r for r in result.rows}
    assert rows["blocks.1"].delta_pct == -100.0 and rows["blocks.1"].not_recorded is None
    assert result.per_step is None and "per_step" not in result.to_json()


def test_diff_text_says_not_in_the_recorded_steps() -> None:
    console = make_console(width=140)
    with console.capture() as cap:
        result = diff(run({"blocks.0": 10.0, "blocks.1": 4.0}, recorded=4), run({"blocks.0": 9.0}, 2, 10), "module")
        render_diff(console, result)
    out = cap.get()
    assert f"new: {NOT_RECORDED}" in out and "-100" not in out
    assert "per step (base: mean of 4 recorded steps of 4; new: mean of 2 recorded steps of 10)" in out


def test_advisor_savings_of_a_sample_are_per_step() -> None:
    finding = Finding("slow", Severity.WARNING, "slow line", "60 ms", estimated_saving_ms=60.0, saving_method="all")
    (got,) = per_step_savings([finding], scale_of(coverage(3, 20)))
    assert got.estimated_saving_ms == 20.0 and got.saving_method == "all; per step (mean of 3 recorded steps of 20)"
    assert per_step_savings([finding], scale_of(coverage(3, 3))) == [finding]


def chain(recorded: int, steps: int) -> Profile:
    """A line that runs four elementwise ops of 1 ms each, once a step, in ``recorded`` of ``steps`` steps."""
    ops = ("aten::add", "aten::mul", "aten::clamp", "aten::reciprocal")
    paths = [([LINE, Frame.op(op)], {"time_ns": 1e6 * recorded, "count": recorded}) for op in ops]
    return build(paths, coverage(recorded, steps))


def test_advisor_reads_a_sample_per_step() -> None:
    """The rules see one mean step of a sample: the same evidence, occurrences and saving however many steps the
    budget recorded (before, the evidence quoted the sample's totals: "3 execution(s), 12.0 ms")."""
    few, more = (run_rules(chain(n, 40), only={"unfused_elementwise"}) for n in (3, 12))

    def read(f: Finding) -> dict[str, Any]:
        return {k: v for k, v in f.to_json().items() if k != "saving_method"}  # (it names the steps recorded)

    assert [read(f) for f in few] == [read(f) for f in more] and len(few) == 1
    (f,) = few
    assert f.evidence.startswith("per execution: add×1, clamp×1, mul×1, reciprocal×1; 1 execution(s), 4.0 ms")
    assert f.estimated_saving_ms == 3.0 and f.occurrences == 1
    assert f.saving_method.endswith("per step (mean of 3 recorded steps of 40)")
    (whole,) = run_rules(chain(12, 12), only={"unfused_elementwise"})  # a complete run: its totals, as recorded
    assert whole.estimated_saving_ms == 36.0 and "12 execution(s)" in whole.evidence


def test_report_header_gives_the_per_step_factor() -> None:
    header = build_payload(run({"blocks.0": 10.0}, recorded=3, steps=20), sources=False)["header"]
    assert header["per_step"] == {
        "factor": pytest.approx(1 / 3),
        "statement": "per step (mean of 3 recorded steps of 20)",
    }
    assert build_payload(run({"blocks.0": 10.0}), sources=False)["header"]["per_step"] is None


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, dict[str, Any]]:
    rc = main(argv)
    return rc, json.loads(capsys.readouterr().out)


def test_history_stores_runs_of_steps_per_step(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "h.duckdb")
    for name, profile in (("a", run({"blocks.0": 10.0}, recorded=4)), ("b", run({"blocks.0": 10.0}, 2, 10))):
        profile.save(str(tmp_path / f"{name}.ksprof"))
        assert main(["history", "add", str(tmp_path / f"{name}.ksprof"), "--db", db]) == 0
    capsys.readouterr()
    rc, doc = _json(capsys, ["history", "show", "blocks.0", "--by", "module", "--db", db, "--json"])
    assert rc == 0 and [s["value"] for s in doc["series"]] == [10e6, 10e6]


@pytest.mark.slow
def test_two_live_samples_of_different_lengths(tmp_path: Path) -> None:
    """The same program recorded for 3 and for 6 of its steps: per step, every op makes as many calls."""
    pytest.importorskip("torch")
    cell = REPO / "tests" / "live_matrix"
    env = env_without_color() | {"KS_STEP": "1"}
    paths = []
    for steps in (3, 6):
        out = tmp_path / f"s{steps}.ksprof"
        argv = ["run", "--skip-first", "2", "--steps", str(steps), "--no-view", "-o", str(out), "eager.py"]
        r = subprocess.run(
            [sys.executable, "-m", "kernelscope", *argv], capture_output=True, text=True, cwd=cell, env=env
        )
        assert r.returncode == 0, r.stderr[-2000:]
        paths.append(str(out))
    cmd = [sys.executable, "-m", "kernelscope", "diff", *paths, "--by", "op", "-m", "count", "--json"]
    r = subprocess.run([*cmd, "--fail-above", "1"], capture_output=True, text=True, env=env, cwd=os.getcwd())
    assert r.returncode == 0, r.stdout[-2000:]
    doc = json.loads(r.stdout)
    assert (
        doc["per_step"] == "per step (base: mean of 3 recorded steps of 30; new: mean of 6 recorded steps of 30)"
    )  # (the run made 30 steps: --skip-first 2 skips recording them, not making them)
    ops = [row for row in doc["rows"] if row["key"] is not None]
    assert ops and all(row["delta"] == 0 for row in ops)  # (as recorded: every op +100%)


def test_history_gate_leaves_a_key_out_of_the_samples_that_lack_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Base: three complete runs; new: three samples of 2 of 10 steps, none of which holds blocks.1, and
    head tripled. blocks.1 is not in the recorded steps (not -100%); head is flagged."""
    db = str(tmp_path / "h.duckdb")
    runs = [("base", run({"blocks.0": 10.0 + i, "blocks.1": 4.0, "head": 1.0}, recorded=4)) for i in range(3)]
    runs += [("new", run({"blocks.0": 10.0 + i, "head": 3.0 + 0.1 * i}, recorded=2, steps=10)) for i in range(3)]
    for i, (label, profile) in enumerate(runs):
        path = str(tmp_path / f"{i}.ksprof")
        profile.save(path)
        assert main(["history", "add", path, "--db", db, "--label", f"v={label}"]) == 0
    capsys.readouterr()
    argv = ["history", "gate", "--db", db, "--base", "v=base", "--new", "v=new", "--by", "module", "--fail-above", "50"]
    rc, doc = _json(capsys, [*argv, "--json"])
    keys = {k["key"]: k for k in doc["keys"]}
    assert keys["blocks.1"]["not_recorded"] == "new" and keys["blocks.1"]["change_pct"] is None
    assert not keys["blocks.1"]["flagged"] and keys["blocks.1"]["base"] == 4e6
    assert rc == 1 and [k["key"] for k in doc["flagged"]] == ["head"]
    main(argv)
    assert f"new: {NOT_RECORDED}" in capsys.readouterr().out
    # the trend (older half vs newer half of the six runs) says the same
    rc, doc = _json(capsys, ["history", "trend", "--by", "module", "--db", db, "--json"])
    trend = {k["key"]: k for k in doc["keys"]}
    assert trend["blocks.1"]["not_recorded"] == "after" and trend["blocks.1"]["change_pct"] is None
    assert trend["head"]["change_pct"] == pytest.approx(210.0)  # (medians 1.0 and 3.1 ms)
    main(["history", "report", "-o", str(tmp_path / "t.html"), "--by", "module", "--db", db])
    assert f"after: {NOT_RECORDED}" in (tmp_path / "t.html").read_text()


def test_analyze_json_says_savings_are_per_step(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "s.ksprof")
    run({"blocks.0": 10.0}, recorded=3, steps=20).save(path)
    rc, doc = _json(capsys, ["analyze", path, "--json"])
    assert rc == 0 and doc["per_step"] == "per step (mean of 3 recorded steps of 20)"
    run({"blocks.0": 10.0}).save(path)
    rc, doc = _json(capsys, ["analyze", path, "--json"])
    assert rc == 0 and "per_step" not in doc
