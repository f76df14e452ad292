from __future__ import annotations

import io
import json
import sys

import pytest

from conftest import build
from kernelscope.analysis.metrics import parse_metric, parse_metrics
from kernelscope.analysis.views import TreeOptions, group, tree_view
from kernelscope.errors import UsageError
from kernelscope.model import Frame
from kernelscope.render.console import make_console
from kernelscope.render.json_view import dump, grouped_json, tree_json
from kernelscope.render.table_text import render_grouped
from kernelscope.render.tree_text import render_tree

LINE = Frame.python("train.py", 42, "step")
FC = Frame.module_("blocks.0.fc", "Linear")


def sample():
    return build(
        [
            (
                [LINE, FC, Frame.op("aten::linear"), Frame.op("aten::addmm"), Frame.kernel("gemm", "cuda:0", 7)],
                {"time_ns": 6e6, "count": 2, "flops": 6e9},
            ),
            (
                [LINE, FC, Frame.backward(), Frame.op("aten::mm"), Frame.kernel("gemm", "cuda:0", 7)],
                {"time_ns": 3e6, "count": 1},
            ),
            (
                [
                    Frame.python("model.py", 7, "forward"),
                    Frame.kernel("fused_add_gelu"),
                    Frame.part("aten::add", "model.py", 8, "blocks.0"),
                ],
                {"time_ns": 2e6},
            ),
            (
                [
                    Frame.python("model.py", 7, "forward"),
                    Frame.kernel("fused_add_gelu"),
                    Frame.part("aten::gelu", "model.py", 9, "blocks.0.act"),
                ],
                {"time_ns": 1e6},
            ),
            ([Frame.op("aten::copy_")], {"time_ns": 1e6, "count": 1}),
            ([Frame.scope("step")], {"tokens": 4096}),
        ]
    )


def rows(g):
    return [(k, v) for k, v in g.rows]


def test_group_by_line_puts_parts_on_their_own_lines_and_null_last() -> None:
    g = group(sample(), "line", ["time_ns"])
    assert rows(g) == [
        ("train.py:42", {"time_ns": 9e6}),
        ("model.py:8", {"time_ns": 2e6}),
        ("model.py:9", {"time_ns": 1e6}),
        (None, {"time_ns": 1e6}),
    ]
    assert g.total == {"time_ns": 13e6}


def test_group_by_module_op_kernel() -> None:
    p = sample()
    assert rows(group(p, "module", ["time_ns"]))[:3] == [
        ("blocks.0.fc", {"time_ns": 9e6}),
        ("blocks.0", {"time_ns": 2e6}),
        ("blocks.0.act", {"time_ns": 1e6}),
    ]
    assert {k: v["time_ns"] for k, v in rows(group(p, "op", ["time_ns"]))} == {
        "aten::addmm": 6e6,
        "aten::mm": 3e6,
        "aten::add": 2e6,
        "aten::gelu": 1e6,
        "aten::copy_": 1e6,
    }
    assert rows(group(p, "kernel", ["time_ns", "count"]))[0] == ("gemm", {"time_ns": 9e6, "count": 3})


def test_derived_metrics() -> None:
    totals = {"time_ns": 4e6, "tokens": 100.0}
    values = {"time_ns": 2e6, "count": 4.0, "flops": 2e9, "bytes": 1e6, "tokens": 50.0}
    avail = set(values)
    assert parse_metric("time/ms", avail)(values, totals) == 2.0
    assert parse_metric("time/%", avail)(values, totals) == 50.0
    assert parse_metric("avg", avail)(values, totals) == 500.0  # µs per call
    assert parse_metric("tflop/s", avail)(values, totals) == pytest.approx(1.0)
    assert parse_metric("gbyte/s", avail)(values, totals) == pytest.approx(0.5)
    assert parse_metric("time_ns/tokens", avail)(values, totals) == 4e4
    assert parse_metric("tokens/s", avail)(values, totals) == pytest.approx(25000.0)
    with pytest.raises(UsageError, match="unknown metric"):
        parse_metric("bogus", avail)
    assert [s.name for s in parse_metrics("time/ms,count", avail, [])] == ["time/ms", "count"]


def test_tree_view_depth_include_exclude_threshold() -> None:
    p = sample()
    labels = lambda tv: [p.frame_of(n).label() for n in tv.order]  # noqa: E731
    assert labels(tree_view(p, TreeOptions(depth=1))) == [
        "<root>",
        "train.py:42 step",
        "model.py:7 forward",
        "aten::copy_",
        "[step]",
    ]
    inc = labels(tree_view(p, TreeOptions(include="backward")))
    assert inc == ["<root>", "train.py:42 step", "blocks.0.fc (Linear)", "[backward]", "aten::mm", "gemm"]
    exc = labels(tree_view(p, TreeOptions(exclude="blocks", depth=2)))
    assert "blocks.0.fc (Linear)" not in exc and "fused_add_gelu" in exc
    thr = labels(tree_view(p, TreeOptions(threshold_pct=10, depth=1)))
    assert thr == ["<root>", "train.py:42 step", "model.py:7 forward"]
    with pytest.raises(UsageError, match="regex"):
        tree_view(p, TreeOptions(include="("))


def test_tree_json_has_the_documented_shape() -> None:
    p = sample()
    doc = tree_json(tree_view(p), ["time_ns", "count"])
    assert doc["schema"] == 1 and doc["metrics"] == ["time_ns", "count"]
    root = doc["root"]
    assert root["kind"] == "root" and set(root) >= {"kind", "name", "metrics", "children"}
    line = root["children"][0]
    assert (line["kind"], line["file"], line["line"], line["metrics"]["time_ns"]) == ("python", "train.py", 42, 0.0)
    part = root["children"][1]["children"][0]["children"][0]
    assert part["kind"] == "part" and part["estimated"] is True


def test_grouped_json_shape() -> None:
    doc = grouped_json(group(sample(), "line", ["time_ns"]))
    assert doc["schema"] == 1 and doc["by"] == "line"
    assert doc["rows"][-1] == {"key": None, "metrics": {"time_ns": 1e6}}
    assert doc["total"] == {"time_ns": 13e6}


HOSTILE = [
    "</script><script>alert(1)</script>",
    "a & b < c",
    "x" * 10_000,
    "semi;colon\nnewline",
    "[bold]markup[/bold]",
]


def test_hostile_names_and_deep_stacks_render_everywhere() -> None:
    # given hostile names and a 5,000-deep stack
    deep = [Frame.python("deep.py", i, f"f{i}") for i in range(5000)]
    paths = [([Frame.python(n, 1, n), Frame.kernel(n)], {"time_ns": 1.0}) for n in HOSTILE]
    p = build([*paths, (deep, {"time_ns": 5.0, "count": 1})])
    specs = parse_metrics(None, set(p.metrics), ["time/ms", "time/%", "count"])
    out = io.StringIO()
    console = make_console(out, width=120)
    # when every renderer runs
    render_tree(console, tree_view(p), specs)
    for by in ("line", "kernel"):
        render_grouped(console, group(p, by), specs)
    buf = io.StringIO()
    dump(tree_json(tree_view(p), ["time_ns"]), buf, depth_hint=5001)
    # then nothing raises, markup is not interpreted and JSON parses back
    text = out.getvalue()
    assert "[bold]markup[/bold]" in text
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(30_000)
    try:
        assert json.loads(buf.getvalue())["root"]["children"]
    finally:
        sys.setrecursionlimit(old)


def test_by_kernel_on_a_cpu_only_run_groups_by_the_op_doing_the_work() -> None:
    # given a CPU-only live profile: ops carry time_ns, one compiled kernel too
    paths = [
        ([LINE, Frame.op("aten::linear"), Frame.op("aten::addmm")], {"time_ns": 5.0}),
        ([LINE, Frame.kernel("graph_0_cpp_fused_add_0", "cpu")], {"time_ns": 2.0}),
    ]
    cpu = build(paths, {"device_run": False})
    assert {k: v["time_ns"] for k, v in group(cpu, "kernel", ["time_ns"]).rows} == {
        "aten::addmm": 5.0,
        "graph_0_cpp_fused_add_0": 2.0,
    }
    # and elsewhere only kernel frames count
    assert {k: v["time_ns"] for k, v in group(build(paths), "kernel", ["time_ns"]).rows} == {
        "graph_0_cpp_fused_add_0": 2.0,
        None: 5.0,
    }
