from __future__ import annotations

import io
import json
import math
import sys

import numpy as np
import pytest

from conftest import build
from kernelscope.analysis.metrics import parse_metric, parse_metrics
from kernelscope.analysis.views import TreeOptions, group, simplify, tree_view
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
    # a user metric per second is per second of wall time, undefined without one
    assert math.isnan(parse_metric("tokens/s", avail)(values, totals))
    assert parse_metric("tokens/s", avail)(values, {**totals, "wall_ns": 5e8}) == pytest.approx(100.0)
    # a division by zero is undefined (blank), never 0
    assert math.isnan(parse_metric("avg", avail)({"time_ns": 1.0, "count": 0.0}, totals))
    assert math.isnan(parse_metric("time/%", avail)(values, {"time_ns": 0.0}))
    with pytest.raises(UsageError, match="unknown metric"):
        parse_metric("bogus", avail)
    assert [s.name for s in parse_metrics("time/ms,count", avail, [])] == ["time/ms", "count"]


def labels(tv):
    return [tv.profile.frame_of(n).label() for n in tv.order]


def test_tree_view_depth_include_hide_threshold() -> None:
    p = sample()
    assert labels(tree_view(p, TreeOptions(depth=1))) == [
        "<root>",
        "train.py:42 step",
        "model.py:7 forward",
        "aten::copy_",
        "[step]",
    ]
    inc = labels(tree_view(p, TreeOptions(include="backward")))
    assert inc == ["<root>", "train.py:42 step", "blocks.0.fc (Linear)", "[backward]", "aten::mm", "gemm"]
    hid = tree_view(p, TreeOptions(hide="blocks", depth=2))
    assert "blocks.0.fc (Linear)" not in labels(hid) and "fused_add_gelu" in labels(hid)
    assert hid.inclusive["time_ns"][0] == 13e6  # hidden rows keep their time
    line = labels(hid).index("train.py:42 step")
    assert hid.hidden[hid.order[line]].count == 1 and hid.hidden[hid.order[line]].value == 9e6
    thr = labels(tree_view(p, TreeOptions(threshold_pct=10, depth=1)))
    assert thr == ["<root>", "train.py:42 step", "model.py:7 forward"]
    with pytest.raises(UsageError, match="regex"):
        tree_view(p, TreeOptions(include="("))


def test_exclude_lowers_every_parent_by_exactly_the_excluded_time() -> None:
    # given a tree where "[backward]" holds 3 ms under train.py:42 and blocks.0.fc
    p = sample()
    before = tree_view(p)
    # when it is excluded
    after = tree_view(p, TreeOptions(exclude=r"^\[backward\]$"))
    # then it is gone and each ancestor's inclusive time is exactly 3 ms lower
    assert "[backward]" not in labels(after)
    incl_before = dict(zip(labels(before), before.inclusive["time_ns"][list(before.order)], strict=True))
    incl_after = dict(zip(labels(after), after.inclusive["time_ns"][list(after.order)], strict=True))
    for ancestor in ("<root>", "train.py:42 step", "blocks.0.fc (Linear)"):
        assert incl_before[ancestor] - incl_after[ancestor] == 3e6
    for other in ("model.py:7 forward", "aten::linear", "aten::copy_"):
        assert incl_before[other] == incl_after[other]


def test_include_keeps_matching_subtrees_whole_and_only_their_time() -> None:
    p = sample()
    tv = tree_view(p, TreeOptions(include="fc", depth=None))
    assert labels(tv) == [
        "<root>",
        "train.py:42 step",
        "blocks.0.fc (Linear)",
        "aten::linear",
        "aten::addmm",
        "gemm",
        "[backward]",
        "aten::mm",
        "gemm",
    ]
    assert tv.inclusive["time_ns"][0] == 9e6


def test_single_child_chains_collapse_and_say_what_they_hide() -> None:
    p = build(
        [
            (
                [Frame.python("a/x.py", 1, "main"), Frame.python("a/y.py", 2, "run"), Frame.op("aten::mm")],
                {"time_ns": 5},
            ),
            (
                [Frame.python("a/x.py", 1, "main"), Frame.python("a/y.py", 2, "run"), Frame.op("aten::add")],
                {"time_ns": 3},
            ),
        ]
    )
    tv = tree_view(p, TreeOptions(collapse=True))
    assert labels(tv) == ["<root>", "a/y.py:2 run", "aten::mm", "aten::add"]
    run = tv.order[1]
    assert [tv.profile.frame_of(n).label() for n in tv.collapsed[run]] == ["a/x.py:1 main"]
    assert tv.depth == (0, 1, 2, 2)


def test_steps_merge_and_module_instances_group_by_class() -> None:
    enc = Frame.python("m.py", 5, "forward")
    paths = [
        (
            [Frame.scope(f"ProfilerStep#{s}"), enc, Frame.module_(f"Layer_{i}", "Layer"), Frame.op("aten::mm")],
            {"time_ns": 1.0, "count": 1},
        )
        for s in (6, 7, 8)
        for i in range(4)
    ]
    p = simplify(build(paths))
    assert labels(tree_view(p)) == ["<root>", "[ProfilerStep#6..8]", "m.py:5 forward", "Layer ×4 (Layer)", "aten::mm"]
    assert p.total("time_ns") == 12.0
    per_step = simplify(build(paths), per_step=True)
    assert sum(lab.startswith("[ProfilerStep#") for lab in labels(tree_view(per_step))) == 3
    # flat views key instances by class
    assert [k for k, _ in group(build(paths), "module", ["time_ns"]).rows] == ["Layer"]


def test_count_is_the_calls_of_the_key_frame_itself() -> None:
    # given a line that calls an op twice, each launching one kernel
    p = build([([LINE, Frame.op("aten::mm"), Frame.kernel("gemm")], {"time_ns": 4.0, "count": 2})])
    p = p.replace(metrics={**p.metrics, "count": np.asarray([0.0, 1.0, 2.0, 2.0])})
    assert group(p, "op", ["count"]).rows == (("aten::mm", {"count": 2.0}),)
    assert group(p, "kernel", ["count"]).rows == (("gemm", {"count": 2.0}),)
    assert group(p, "line", ["count"]).rows == (("train.py:42", {"count": 1.0}),)


def test_group_by_function() -> None:
    p = sample()
    assert {k: v["time_ns"] for k, v in group(p, "function", ["time_ns"]).rows} == {
        "train.py:step": 9e6,
        "model.py:forward": 3e6,
        None: 1e6,
    }


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
