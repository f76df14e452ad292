"""Golden files for terminal and JSON output at a fixed width (KERNELSCOPE_UPDATE_GOLDEN=1 rewrites them)."""

from __future__ import annotations

import io
import os
import re
from pathlib import Path

import pytest

from conftest import build
from kernelscope.analysis.metrics import parse_metrics
from kernelscope.analysis.views import TreeOptions, group, tree_view
from kernelscope.render.console import make_console
from kernelscope.render.json_view import dump, grouped_json, tree_json
from kernelscope.render.table_text import render_grouped
from kernelscope.render.tree_text import render_tree
from test_views import sample

GOLDEN = Path(__file__).parent / "golden"
SPECS = ["time/ms", "time/%", "count", "flops"]


def _check(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("KERNELSCOPE_UPDATE_GOLDEN"):
        path.write_text(text)
    assert path.exists(), f"missing golden file {path}; run with KERNELSCOPE_UPDATE_GOLDEN=1"
    assert text == path.read_text()


def _console() -> tuple[io.StringIO, object]:
    out = io.StringIO()
    return out, make_console(out, width=100)


@pytest.mark.parametrize("by", ["tree", "line", "module", "op", "kernel"])
def test_terminal_views_match_golden(by: str) -> None:
    p = sample()
    specs = parse_metrics(SPECS, set(p.metrics), [])
    out, console = _console()
    if by == "tree":
        render_tree(console, tree_view(p, TreeOptions()), specs)  # type: ignore[arg-type]
    else:
        render_grouped(console, group(p, by, p.metric_names), specs)  # type: ignore[arg-type]
    _check(f"view_{by}.txt", out.getvalue())


@pytest.mark.parametrize("by", ["tree", "line"])
def test_json_views_match_golden(by: str) -> None:
    p = sample()
    buf = io.StringIO()
    if by == "tree":
        dump(tree_json(tree_view(p), p.metric_names), buf)
    else:
        dump(grouped_json(group(p, by, p.metric_names)), buf)
    _check(f"view_{by}.json", buf.getvalue())


def test_empty_profile_renders() -> None:
    p = build([])
    out, console = _console()
    render_tree(console, tree_view(p), parse_metrics(None, set(p.metrics), ["count"]))  # type: ignore[arg-type]
    assert "total" in out.getvalue()


# --- real profiles, as a new user sees them ---------------------------------------------------------
REAL_TRACES = {
    "owlv2": "tracelens_h100_owlv2_inference_modules_memory.json.gz",  # H100, modules, python stacks
    "vllm": "tracelens_b200_vllm_tp8_rank0_compiled_nccl.json.gz",  # B200, torch.compile, NCCL
    "resnet": "tracelens_mi300_ddp_resnet_actckpt_train_rank0.json.gz",  # MI300X, 3 steps, backward
}
LIVE = Path(__file__).parent / "data" / "tiny_transformer_cpu.ksprof"  # `kernelscope run examples/tiny_transformer.py`
VIEWS = ["tree", "line", "function", "module", "op", "kernel"]
WIDTHS = [80, 120]
MAX_TREE_LINES = 60


@pytest.fixture(scope="module")
def real_profiles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from conftest import SHARED_TRACES
    from kernelscope.inputs import open_profile
    from kernelscope.model import save

    if not SHARED_TRACES.is_dir():
        pytest.skip("../shared/traces is absent")
    folder = tmp_path_factory.mktemp("real")
    out = {}
    for name, trace in REAL_TRACES.items():
        out[name] = folder / f"{name}.ksprof"
        save(open_profile(str(SHARED_TRACES / trace)), out[name])
    return out


def _cli(argv: list[str], width: int, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> str:
    from kernelscope.cli.main import main

    monkeypatch.setenv("COLUMNS", str(width))
    rc = main(argv)
    out = capsys.readouterr()
    assert rc == 0, out.err
    return out.out


_PY_WITHOUT_LINE = re.compile(r"\.py(?![:\w])")


def _check_screen(text: str, width: int, what: str) -> None:
    lines = text.splitlines()
    too_wide = [line for line in lines if len(line) > width]
    assert not too_wide, f"{what}: {len(too_wide)} lines wider than {width}: {too_wide[0]!r}"
    body = lines[lines.index("") + 1 :] if "" in lines else lines  # the header names the program, no line
    lost = [line for line in body if _PY_WITHOUT_LINE.search(line)]
    assert not lost, f"{what}: a location lost its line number: {lost[0]!r}"


def _screens(path: Path, width: int, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> str:
    """Every view of one profile at one width, checked and concatenated for one golden file."""
    parts = []
    for by in VIEWS:
        text = _cli(["view", str(path), "--by", by], width, capsys, monkeypatch)
        _check_screen(text, width, f"view --by {by}")
        if by == "tree":
            assert len(text.splitlines()) <= MAX_TREE_LINES
        parts.append(f"$ kernelscope view PROFILE --by {by}\n{text}")
    return "".join(parts)


@pytest.mark.slow
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", list(REAL_TRACES))
def test_real_traces_fit_the_terminal_and_match_golden(
    name: str,
    width: int,
    real_profiles: dict[str, Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = real_profiles[name]
    text = _screens(path, width, capsys, monkeypatch)
    timeline = _cli(["timeline", str(path)], width, capsys, monkeypatch)
    _check_screen(timeline, width, "timeline")
    monkeypatch.chdir(path.parent)  # analyze names its input: keep the golden free of temporary folders
    analyze = _cli(["analyze", path.name], width, capsys, monkeypatch)
    _check_screen(analyze, width, "analyze")
    text += f"$ kernelscope timeline PROFILE\n{timeline}$ kernelscope analyze PROFILE\n{analyze}"
    _check(f"real_{name}_{width}.txt", text)


@pytest.mark.parametrize("width", WIDTHS)
def test_live_profile_fits_the_terminal_and_matches_golden(
    width: int, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = _screens(LIVE, width, capsys, monkeypatch)
    monkeypatch.chdir(LIVE.parent)
    analyze = _cli(["analyze", LIVE.name], width, capsys, monkeypatch)
    _check_screen(analyze, width, "analyze")
    _check(f"live_tiny_transformer_{width}.txt", text + f"$ kernelscope analyze PROFILE\n{analyze}")
