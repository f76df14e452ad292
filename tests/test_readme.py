"""The README's examples run as shown: every ``kernelscope ...`` line of its ``## Using it`` block, with
its placeholders (``OUT.ksprof``, ``trace.json.gz``, ``rank0.json.gz``, ``FILE``) bound to real files and
every ``a|b`` alternative and ``[optional]`` part tried."""

from __future__ import annotations

import fnmatch
import glob
import itertools
import re
import shlex
import shutil
from pathlib import Path

import pytest

from conftest import REPO, SHARED_TRACES
from kernelscope.cli.main import main

LIVE = Path(__file__).parent / "data" / "tiny_transformer_cpu.ksprof"
TRACES = {  # placeholder -> a real trace in ../shared/traces
    "trace.json.gz": "hta_a100_alexnet_cuda_sync.json.gz",
    "rank0.json.gz": "hta_128rank_sampled_rank-0.json.gz",
    "rank1.json.gz": "hta_128rank_sampled_rank-1.json.gz",
    "dir/plugins/profile/run/host.xplane.pb": "tracelens_mi300_jax_te_fused_attn_train.xplane.pb",
}
PROFILES = ("OUT.ksprof", "BASE.ksprof", "NEW.ksprof")  # placeholders bound to the live profile
SCRIPTS = {"kernels.py": REPO / "examples" / "triton_kernels.py"}
NEEDS = {"triton": "triton"}  # verb -> the package it runs (those lines are slow: they run the framework)


def _block(title: str) -> list[str]:
    text = (REPO / "README.md").read_text()
    section = text.split(f"## {title}", 1)[1]
    body = section.split("```bash\n", 1)[1].split("```", 1)[0]
    return [line.split("  #", 1)[0].strip() for line in body.splitlines() if line.startswith("kernelscope ")]


def _variants(line: str) -> list[list[str]]:
    """``x [--json]`` → ``x`` and ``x --json``; ``--format a|b`` → one command per alternative."""
    parts = re.split(r"(\[[^\]]*\])", line)
    choices = [[p] if not p.startswith("[") else ["", p[1:-1]] for p in parts]
    out = []
    for combo in itertools.product(*choices):
        argv = shlex.split("".join(combo))[1:]
        alts = [a.split("|") if "|" in a and not a.startswith("-") else [a] for a in argv]
        out.extend(list(v) for v in itertools.product(*alts))
    return out


USING = [
    pytest.param(line, marks=pytest.mark.slow) if line.split()[1] in NEEDS else line
    for line in _block("Using it")
    if not re.search(r"\bSCRIPT\b|\bMODULE\b", line)  # synopses, not examples
]


@pytest.mark.parametrize("line", USING)
def test_readme_example_runs_as_shown(
    line: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    verb = line.split()[1]
    if verb in NEEDS:
        pytest.importorskip(NEEDS[verb])
    for name in PROFILES:
        shutil.copy(LIVE, tmp_path / name)
    for name, script in SCRIPTS.items():
        shutil.copy(script, tmp_path / name)
    tokens = line.split()
    for placeholder, trace in TRACES.items():
        if placeholder in line or any("*" in t and fnmatch.fnmatch(placeholder, t) for t in tokens):
            if not SHARED_TRACES.is_dir():
                pytest.skip("../shared/traces is absent")
            (tmp_path / placeholder).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / placeholder).symlink_to(SHARED_TRACES / trace)
    monkeypatch.chdir(tmp_path)
    for argv in _variants(line):
        argv = [a.replace("FILE", f"out.{argv[argv.index('--format') + 1]}") if a == "FILE" else a for a in argv]
        argv = [x for a in argv for x in (sorted(glob.glob(a)) or [a] if "*" in a else [a])]  # as a shell would
        rc = main(argv)
        err = capsys.readouterr().err
        assert rc == 0, f"kernelscope {shlex.join(argv)}: {err}"


@pytest.mark.slow
def test_readme_first_command_runs_the_bundled_example(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    text = (REPO / "README.md").read_text()
    cmd = re.search(r"&& kernelscope (run examples/\S+ [^\n]*)", text)
    assert cmd is not None
    argv = shlex.split(cmd.group(1))
    argv[1] = str(REPO / argv[1])
    monkeypatch.chdir(tmp_path)
    assert main([argv[0], "-o", "tiny.ksprof", *argv[1:]]) == 0
    out = capsys.readouterr().out
    assert "ms incl" in out and (tmp_path / "tiny.ksprof").exists()
