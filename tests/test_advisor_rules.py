"""Advisor rule families: literal profiles per rule, grouping, thresholds, and the real GPU traces."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO, build, env_without_color
from kernelscope.analysis.advisor import Severity, rules, run_rules, summary
from kernelscope.cli.main import main
from kernelscope.inputs import open_profile
from kernelscope.model import Frame, Profile

CPU = {"source": {"format": "torch-live"}, "device_run": False}


def _line(n: int, fn: str = "f") -> Frame:
    return Frame.python("m.py", n, fn)


def _by_rule(profile: Profile, **thresholds: float) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for f in run_rules(profile, thresholds=thresholds or None):
        out.setdefault(f.rule, []).append(f)
    return out


def test_every_family_is_one_module_with_documented_thresholds() -> None:
    families = {r.family for r in rules()}
    assert {"gpu_idle", "host_sync", "launch_bound", "communication", "memcpy", "host_side", "fusion"} <= families
    assert {"efficiency", "data_loading", "steps"} <= families
    for r in rules():
        assert r.description and r.applies
        assert all(t.doc for t in r.thresholds.values())


def test_recompiles_at_one_line_are_one_finding_with_summed_cost() -> None:
    recompiles = [
        {
            "reason": f"scale == {k}",
            "guard": "value",
            "function": "step",
            "file": "t.py",
            "line": 9,
            "compile_id": f"0/{k}",
        }
        for k in (1, 2, 3)
    ]
    compiles = [{"compile_id": f"0/{k}", "compile_time_s": 0.5 * k} for k in (1, 2, 3)]
    p = build([([_line(1)], {"time_ns": 1.0})], {**CPU, "compile": {"recompiles": recompiles, "compiles": compiles}})
    (f,) = _by_rule(p)["recompile"]
    assert (f.file, f.line, f.occurrences, f.estimated_saving_ms) == ("t.py", 9, 3, 3000.0)
    assert "3× here" in f.title and "2 more like it" in f.evidence


def _loop_profile(calls: int) -> Profile:
    return build(
        [
            ([_line(10), Frame.op("aten::zeros")], {"time_ns": 5_000.0, "count": 3}),
            ([_line(12), Frame.op("aten::mul")], {"time_ns": 2_000.0 * calls, "count": calls}),
            ([_line(12), Frame.op("aten::add")], {"time_ns": 2_000.0 * calls, "count": calls}),
            ([_line(30, "g"), Frame.op("aten::mm")], {"time_ns": 1e6, "count": 3}),
        ],
        CPU,
    )


def test_tiny_op_loop_names_the_loop_line_and_obeys_its_thresholds() -> None:
    (f,) = _by_rule(_loop_profile(3000))["tiny_op_loop"]
    assert (f.file, f.line, f.occurrences) == ("m.py", 12, 6000)
    assert f.severity is Severity.WARNING and f.estimated_saving_ms and f.saving_method
    assert "tiny_op_loop" not in _by_rule(_loop_profile(3000), **{"tiny_op_loop.min_calls": 10_000})
    assert "tiny_op_loop" not in _by_rule(_loop_profile(300))


def test_unfused_elementwise_chain_and_not_a_lone_op() -> None:
    ops = [("aten::mul", 6), ("aten::add", 3), ("aten::sigmoid", 3), ("aten::relu", 3)]
    chain = build([([_line(20), Frame.op(n)], {"time_ns": 1e6 * c, "count": c}) for n, c in ops], CPU)
    (f,) = _by_rule(chain)["unfused_elementwise"]
    assert (f.line, f.title) == (20, "5 unfused elementwise ops at m.py:20")
    assert f.estimated_saving_ms == pytest.approx(15.0 - 6.0)  # all but the slowest op
    lone = build([([_line(20), Frame.op("aten::add")], {"time_ns": 1e7, "count": 3})], CPU)
    assert "unfused_elementwise" not in _by_rule(lone)


def test_single_tensor_optimizer_but_not_foreach() -> None:
    def step(op: str) -> Profile:
        scope = Frame.scope("Optimizer.step#SGD.step")
        return build(
            [
                ([_line(40, "train"), scope], {"count": 1}),
                ([_line(40, "train"), scope, Frame.op(op)], {"time_ns": 64e4, "count": 64}),
                ([_line(40, "train"), scope, Frame.op("aten::mul_")], {"time_ns": 64e4, "count": 64}),
            ],
            CPU,
        )

    (f,) = _by_rule(step("aten::add_"))["single_tensor_optimizer"]
    assert f.severity is Severity.INFO  # a CPU run: the single-tensor path is the default there
    assert (f.line, f.fix) == (40, "construct SGD with foreach=True (or fused=True on GPU)")
    assert "single_tensor_optimizer" not in _by_rule(step("aten::_foreach_add_"))


def test_step_outliers_and_data_loading_from_scopes() -> None:
    steps = [
        ([Frame.scope(f"ProfilerStep#{i}"), Frame.op("aten::mm")], {"cpu_time_ns": v})
        for i, v in enumerate([1e6, 1e6, 1.1e6, 5e6])
    ]
    loader = [
        (
            [_line(7, "train"), Frame.scope("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__")],
            {"cpu_time_ns": 2e6},
        )
    ]
    found = _by_rule(build(steps + loader, CPU))
    (step,) = found["step_outlier"]
    assert step.occurrences == 1 and step.estimated_saving_ms == pytest.approx(3.95)
    (data,) = found["data_loading"]
    assert (data.line, data.severity, data.estimated_saving_ms) == (7, Severity.WARNING, 2.0)


def test_fp32_gemm_only_where_tensor_cores_exist() -> None:
    meta = {"source": {"format": "kineto"}, "deviceProperties": [{"name": "NVIDIA A100", "computeMajor": 8}]}
    path = [_line(3), Frame.op("aten::addmm"), Frame.kernel("volta_sgemm_128x64_nn")]
    (f,) = _by_rule(build([(path, {"time_ns": 4e6, "count": 2})], meta))["fp32_gemm"]
    assert (f.line, f.estimated_saving_ms, f.occurrences) == (3, 3.0, 2)
    old = {"source": {"format": "kineto"}, "deviceProperties": [{"name": "V100", "computeMajor": 7}]}
    assert "fp32_gemm" not in _by_rule(build([(path, {"time_ns": 4e6, "count": 2})], old))


def test_cpu_run_skips_timeline_rules_and_summary_leads_with_the_costliest() -> None:
    findings = run_rules(_loop_profile(3000))
    assert {f.rule for f in findings} == {"tiny_op_loop"}
    assert summary(findings, 100.0).startswith("1 finding(s) (1 warning); top: 6,000 tiny op calls")
    assert summary([], None) == "No findings."


def test_cli_lists_rules_and_rejects_unknown_thresholds(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", "--list-rules"]) == 0
    assert "gpu_idle.idle_pct = 30" in capsys.readouterr().out
    assert main(["analyze", "x.ksprof", "--threshold", "nope.x=1"]) == 2
    assert main(["analyze", "x.ksprof", "--threshold", "gpu_idle.idle_pct"]) == 2
    assert "Traceback" not in capsys.readouterr().err


# --- real GPU traces (skip without ../shared/traces) ----------------------------------------------
def _analyze_json(path: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    assert main(["analyze", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == 1 and doc["summary"]
    findings: list[dict[str, Any]] = doc["findings"]
    savings = [f.get("estimated_saving_ms") or 0.0 for f in findings]
    assert savings == sorted(savings, reverse=True)
    return findings


def test_alexnet_trace_gets_an_idle_finding(shared_traces: Path, capsys: pytest.CaptureFixture[str]) -> None:
    findings = _analyze_json(shared_traces / "hta_a100_alexnet_cuda_sync.json.gz", capsys)
    idle = next(f for f in findings if f["rule"] == "gpu_idle")
    assert idle["severity"] == "warning" and "idle 99%" in idle["title"] and "host" in idle["title"]
    sync = next(f for f in findings if f["rule"] == "host_sync")
    assert sync["occurrences"] == 21


@pytest.mark.slow
def test_owlv2_trace_gets_a_host_sync_finding_at_its_line(
    shared_traces: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    findings = _analyze_json(shared_traces / "tracelens_h100_owlv2_inference_modules_memory.json.gz", capsys)
    sync = next(f for f in findings if f["rule"] == "host_sync")
    assert (sync["file"], sync["line"], sync["severity"]) == ("transformers/pipelines/base.py", 1173, "warning")
    assert sync["occurrences"] == 75 and sync["estimated_saving_ms"] > 400
    loading = next(f for f in findings if f["rule"] == "data_loading")
    assert loading["severity"] == "warning" and loading["estimated_saving_ms"] > 600
    idle = next(f for f in findings if f["rule"] == "gpu_idle")
    assert "data source" in idle["title"]


@pytest.mark.slow
def test_mi300_ddp_trace_gets_exposed_communication(shared_traces: Path) -> None:
    p = open_profile(str(shared_traces / "tracelens_mi300_ddp_resnet_actckpt_train_rank0.json.gz"))
    findings = run_rules(p)
    assert findings[0].rule == "exposed_comm" and findings[0].severity is Severity.WARNING
    assert findings[0].estimated_saving_ms == pytest.approx(35.089, abs=0.01)
    assert all(f.severity is Severity.INFO for f in findings[1:])


# --- a planted script, run live ------------------------------------------------------------------
@pytest.mark.slow
def test_planted_script_gives_one_finding_per_marked_line(tmp_path: Path) -> None:
    script = REPO / "tests" / "fixtures" / "planted_advisor.py"
    out = tmp_path / "p.ksprof"
    env = env_without_color()
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")])
    cmd = [sys.executable, "-m", "kernelscope", "run", "--max-overhead", "0", "-o", str(out), "--no-view", str(script)]
    subprocess.run(cmd, check=True, env=env, cwd=tmp_path, capture_output=True)
    findings = run_rules(open_profile(str(out)))
    ns: dict[str, Any] = {}
    exec(script.read_text().split("import torch", 1)[1].split("def ", 1)[0], ns)  # the *_LINE constants
    planted = {
        "tiny_op_loop": ns["TINY_LOOP_LINE"],
        "unfused_elementwise": ns["CHAIN_LINE"],
        "dtype_round_trip": ns["ROUND_TRIP_LINE"],
        "single_tensor_optimizer": ns["FOREACH_LINE"],
        "recompile": ns["RECOMPILE_LINE"],
        "data_source": ns["DATA_LINE"],
        "graph_break": ns["BREAK_LINE"],
    }
    source = script.read_text().splitlines()
    marks = {
        "tiny_op_loop": "x[i]",
        "unfused_elementwise": ".sigmoid()",
        "single_tensor_optimizer": "opt.step()",
        "dtype_round_trip": ".double().float()",
        "data_source": "in batches(",
        "graph_break": "print(",
    }
    for rule_name, code in {**marks, "recompile": "scaled(x"}.items():
        assert code in source[planted[rule_name] - 1], (rule_name, planted[rule_name])  # the markers are right
    at = {(f.rule, f.line) for f in findings if f.file and f.file.endswith("planted_advisor.py")}
    for rule_name, line in planted.items():
        assert (rule_name, line) in at
    assert len({f.place for f in findings}) == len(findings)  # none repeated
    for f in findings:
        if (f.rule, f.line) not in planted.items():
            assert f.severity is Severity.INFO, f


@pytest.mark.slow
def test_two_ranks_of_the_128_rank_job_show_a_straggler(shared_traces: Path, tmp_path: Path) -> None:
    ranks = [str(shared_traces / f"hta_128rank_sampled_rank-{i}.json.gz") for i in (0, 1)]
    out = tmp_path / "two.ksprof"
    assert main(["import", *ranks, "-o", str(out)]) == 0
    findings = run_rules(open_profile(str(out)))
    straggler = next(f for f in findings if f.rule == "rank_straggler")
    assert straggler.device is not None and straggler.device.startswith("rank 1")
    assert {f.device for f in findings if f.rule == "exposed_comm"} == {"rank 0/cuda:0", "rank 1/cuda:1"}
