"""Every verb's ``--json``: stdout holds only JSON, and that JSON follows its schema in docs/schemas."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from kernelscope.cli.main import main
from kernelscope.cli.registry import commands
from slow_line_run import REPO, env, run_slow_line

SCHEMAS = REPO / "docs" / "schemas"
PROFILE = REPO / "tests" / "data" / "tiny_transformer_cpu.ksprof"
SMALL_TRACE = "hta_a100_alexnet_cuda_sync.json.gz"
RANK_TRACES = ("hta_128rank_sampled_rank-0.json.gz", "hta_128rank_sampled_rank-1.json.gz")
NO_JSON = {"mcp"}  # a server: it speaks JSON-RPC on stdout already


def _schemas() -> dict[str, dict[str, Any]]:
    return {
        p.name.removesuffix(".schema.json"): json.loads(p.read_text()) for p in sorted(SCHEMAS.glob("*.schema.json"))
    }


def validate(doc: Any, name: str) -> None:
    schemas = _schemas()
    registry: Registry[Any] = Registry().with_resources((s["$id"], Resource.from_contents(s)) for s in schemas.values())
    Draft202012Validator(schemas[name], registry=registry).validate(doc)


def cli_json(capsys: pytest.CaptureFixture[str], *argv: str, code: int = 0) -> Any:
    assert main(list(argv)) == code
    out = capsys.readouterr().out
    return json.loads(out)  # the whole of stdout is one JSON document


def test_the_schemas_are_valid_and_versioned() -> None:
    schemas = _schemas()
    assert len(schemas) >= 10
    for name, schema in schemas.items():
        Draft202012Validator.check_schema(schema)
        assert schema["$id"] == f"urn:kernelscope:schema:{name}:1"
        assert schema["properties"]["schema"] == {
            "const": 1,
            "description": schema["properties"]["schema"]["description"],
        }


# subcommands that print nothing on stdout (one line on stderr says what they wrote)
NO_JSON_SUB = {"history": ("add", "report")}


def test_every_verb_has_json_and_a_schema() -> None:
    names = {p.name.removesuffix(".schema.json") for p in SCHEMAS.glob("*.schema.json")}
    for cmd in commands():
        if cmd.name in NO_JSON:
            continue
        parser = argparse.ArgumentParser()
        cmd.prepare_parser(parser)
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        for name, sub in subs[0].choices.items() if subs else [("", parser)]:  # subcommands: each has --json
            if name in NO_JSON_SUB.get(cmd.name, ()):
                continue
            flags = {s for a in sub._actions for s in a.option_strings}
            assert "--json" in flags, f"kernelscope {cmd.name} {sub.prog} has no --json"
        assert any(n == cmd.name or n.startswith(cmd.name + "-") for n in names), f"no schema for {cmd.name}"


@pytest.mark.parametrize("by", ["tree", "line", "function", "module", "op", "kernel"])
def test_view(by: str, capsys: pytest.CaptureFixture[str]) -> None:
    doc = cli_json(capsys, "view", str(PROFILE), "--by", by, "--json")
    validate(doc, "view-tree" if by == "tree" else "view-grouped")


def test_analyze_and_its_rules(capsys: pytest.CaptureFixture[str]) -> None:
    validate(cli_json(capsys, "analyze", str(PROFILE), "--json"), "analyze")
    rules = cli_json(capsys, "analyze", "--list-rules", "--json")
    validate(rules, "analyze")
    assert {r["name"] for r in rules["rules"]} >= {"gpu_idle", "host_sync"}


def test_diff_with_the_gate(capsys: pytest.CaptureFixture[str]) -> None:
    doc = cli_json(capsys, "diff", str(PROFILE), str(PROFILE), "--json", "--fail-above", "5")
    validate(doc, "diff")
    assert doc["fail_above"]["tripped"] is False


@pytest.mark.traces
def test_timeline_and_analyze_on_a_trace(shared_traces: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = str(shared_traces / SMALL_TRACE)
    validate(cli_json(capsys, "timeline", trace, "--json"), "timeline")
    validate(cli_json(capsys, "analyze", trace, "--json"), "analyze")
    validate(cli_json(capsys, "view", trace, "--json", "--by", "kernel"), "view-grouped")


@pytest.mark.traces
def test_import_one_and_several(shared_traces: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one = cli_json(capsys, "import", str(shared_traces / SMALL_TRACE), "-o", str(tmp_path / "one.ksprof"), "--json")
    validate(one, "import")
    assert [p["path"] for p in one["profiles"]] == [str(tmp_path / "one.ksprof")]
    traces = [str(shared_traces / t) for t in RANK_TRACES]
    several = cli_json(capsys, "import", *traces, "-o", str(tmp_path / "job.ksprof"), "--json", "-j", "1")
    validate(several, "import")
    assert [p["trace"] for p in several["profiles"]] == [*traces, None]
    assert all(Path(p["path"]).exists() for p in several["profiles"])


@pytest.mark.slow
@pytest.mark.traces
def test_import_store_and_ranks(shared_traces: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("duckdb")
    traces = [str(shared_traces / t) for t in RANK_TRACES]
    store = str(tmp_path / "job")
    doc = cli_json(capsys, "import", *traces, "--store", store, "--workers", "1", "--json")
    validate(doc, "import")
    assert doc["store"]["ranks"] == [0, 1] and doc["store"]["skipped"] == []
    ranks = cli_json(capsys, "ranks", store, "--json")
    validate(ranks, "ranks")
    assert ranks["ranks"] == [0, 1]


def test_report_and_export(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    html = tmp_path / "r.html"
    validate(cli_json(capsys, "report", str(PROFILE), "-o", str(html), "--json"), "report")
    assert html.exists()
    out = tmp_path / "p.folded"
    doc = cli_json(capsys, "export", str(PROFILE), "-f", "folded", "-o", str(out), "--json")
    validate(doc, "export")
    assert doc["format"] == "folded" and out.exists()
    assert main(["export", str(PROFILE), "-f", "folded", "-o", "-", "--json"]) == 2
    assert "--json needs -o FILE" in capsys.readouterr().err


@pytest.mark.slow
def test_run_json_is_alone_on_stdout(tmp_path_factory: pytest.TempPathFactory) -> None:
    run = run_slow_line(tmp_path_factory.getbasetemp())
    assert run.returncode == 0, run.stderr
    validate(run.doc, "run")
    assert run.doc["profile"] == str(run.profile) and run.doc["exit_code"] == 0
    assert run.doc["view"]["root"]["kind"] == "root"
    assert "checksum" in run.stderr and "checksum" not in run.stdout  # the program's own print


@pytest.mark.slow
def test_triton_json_is_alone_on_stdout(tmp_path: Path) -> None:
    pytest.importorskip("triton")
    script = tmp_path / "noisy_triton.py"
    script.write_text(
        "import os, sys\n"
        f"sys.path.insert(0, {str(REPO / 'examples')!r})\n"
        "import triton_kernels\n"
        "print('hello from print')\n"
        "os.write(1, b'hello from fd 1\\n')\n"
        "triton_kernels.add()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "kernelscope", "triton", "--json", str(script)],
        cwd=tmp_path,
        env=env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    validate(doc, "triton")
    assert doc["launches"][0]["kernel"] == "add_kernel"
    assert "hello from print" in proc.stderr and "hello from fd 1" in proc.stderr
