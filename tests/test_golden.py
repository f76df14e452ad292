"""Golden files for terminal and JSON output at a fixed width (KERNELSCOPE_UPDATE_GOLDEN=1 rewrites them)."""

from __future__ import annotations

import io
import os
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
