"""kernelscope diff: unify by normalised path, moved lines, renamed kernels, the --fail-above gate."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import REPO, build, env_without_color
from kernelscope.analysis.diff import diff, regressions
from kernelscope.analysis.diff.normalize import normal_file, normal_kernel
from kernelscope.cli.main import main
from kernelscope.model import Frame, FrameKind, Profile


def _model(offset: int, width: float, kernel_suffix: int) -> Profile:
    """A step whose layer ``b`` costs ``width``; ``offset`` lines were inserted above forward's body."""
    top = Frame.python("train.py", 40 + offset, "<module>")
    fwd = Frame.module_("net", "Net")

    def line(n: int) -> Frame:
        return Frame.python("model.py", n + offset, "forward")

    return build(
        [
            (
                [top, fwd, line(12), Frame.module_("a", "Linear"), Frame.op("aten::addmm")],
                {"time_ns": 100.0, "count": 1},
            ),
            (
                [top, fwd, line(13), Frame.module_("b", "Linear"), Frame.op("aten::addmm")],
                {"time_ns": 100.0 * width, "count": 1},
            ),
            (
                [top, fwd, line(14), Frame.op("aten::relu"), Frame.kernel(f"triton_poi_fused_relu_{kernel_suffix}")],
                {"time_ns": 10.0, "count": 1},
            ),
        ]
    )


def test_moved_line_and_wider_layer_top_the_diff_matched_to_the_base() -> None:
    base, new = _model(0, 1.0, 0), _model(3, 2.0, 7)
    by_line = diff(base, new, by="line")
    top = by_line.rows[0]
    assert (top.key, top.base_key, top.base, top.new) == ("model.py:16", "model.py:13", 100.0, 200.0)
    assert all(r.delta == 0 for r in by_line.rows[1:])
    by_module = diff(base, new, by="module")
    assert (by_module.rows[0].key, by_module.rows[0].delta) == ("b", 100.0)
    by_kernel = diff(base, new, by="kernel")
    assert [(r.key, r.delta) for r in by_kernel.rows if r.key] == [("triton_poi_fused_relu", 0.0)]
    assert diff(base, new, by="tree").rows[0].delta == 100.0


def test_a_line_that_ran_other_work_is_not_paired() -> None:
    base = build([([Frame.python("m.py", 5, "f"), Frame.op("aten::mm")], {"time_ns": 5.0})])
    new = build([([Frame.python("m.py", 5, "f"), Frame.op("aten::conv2d")], {"time_ns": 5.0})])
    rows = {r.key: (r.base, r.new) for r in diff(base, new, by="op").rows}
    assert rows == {"aten::mm": (5.0, 0.0), "aten::conv2d": (0.0, 5.0)}


def test_a_compiled_region_matches_across_a_live_run_and_an_import() -> None:
    # a live run knows the torch.compile line (the region's location), an imported trace does not: one region
    live_region = Frame(FrameKind.REGION, "MLP.forward", file="train.py", line=17, cls="torch.compile", ids="1/0")
    trace_region = Frame(FrameKind.REGION, "MLP.forward", cls="torch.compile", ids="0/0")
    other = Frame(FrameKind.REGION, "loss_fn", cls="torch.compile", ids="2/0")
    top = Frame.python("train.py", 22, "main")

    def run(region: Frame, time: float) -> Profile:
        return build(
            [
                ([top, region, Frame.op("aten::addmm")], {"time_ns": time, "count": 1}),
                ([top, other, Frame.op("aten::mul")], {"time_ns": 5.0, "count": 1}),
            ]
        )

    tree = diff(run(live_region, 100.0), run(trace_region, 150.0), by="tree")
    rows = {r.key: (r.base, r.new) for r in tree.rows}
    assert rows["train.py:22 main > <torch.compile(MLP.forward)>"] == (100.0, 150.0)
    assert rows["train.py:22 main > <torch.compile(loss_fn)>"] == (5.0, 5.0)
    assert len([k for k in rows if "torch.compile" in k]) == 4  # the two regions and their ops, nothing apart


def test_a_compiled_model_matches_across_a_live_run_and_an_import() -> None:
    # torch.compile(model): the region runs inside the model, which a live run names by its class and attribute
    # paths, a trace by class and instance counter
    live = build(
        [
            ([Frame.python("train.py", 22, "main"), Frame.module_("MLP", "MLP"), Frame(FrameKind.REGION, "MLP.forward", file="train.py", line=17, cls="torch.compile"), Frame.module_("layers.0", "Linear"), Frame.op("aten::addmm")], {"time_ns": 100.0, "count": 1}),
            ([Frame.python("train.py", 22, "main"), Frame.module_("head", "Linear"), Frame.op("aten::addmm")], {"time_ns": 10.0, "count": 1}),
            ([Frame.python("train.py", 22, "main"), Frame.module_("proj", "Linear"), Frame.op("aten::addmm")], {"time_ns": 10.0, "count": 1}),
        ]
    )  # fmt: skip
    trace = build(
        [
            ([Frame.python("train.py", 10, "main"), Frame.module_("MLP_0", "MLP"), Frame(FrameKind.REGION, "MLP.forward", cls="torch.compile"), Frame.op("aten::addmm")], {"time_ns": 120.0, "count": 1}),
            ([Frame.python("train.py", 10, "main"), Frame.module_("Linear_3", "Linear"), Frame.op("aten::addmm")], {"time_ns": 10.0, "count": 1}),
            ([Frame.python("train.py", 10, "main"), Frame.module_("Linear_4", "Linear"), Frame.op("aten::addmm")], {"time_ns": 10.0, "count": 1}),
        ]
    )  # fmt: skip
    for base, new in ((live, trace), (trace, live)):
        rows = {r.key: (r.base, r.new) for r in diff(base, new, by="tree").rows}
        (region,) = [v for k, v in rows.items() if k.endswith("> MLP (MLP) > <torch.compile(MLP.forward)>")]
        assert sorted(region) == [100.0, 120.0], rows
        # two Linears of one parent: which is which is not known, so they stay apart (and inside the region, where
        # a trace records no modules, the live run's layers.0 has no counterpart)
        assert {k.split(" > ")[-1] for k in rows if k.endswith("(Linear)")} == {
            "head (Linear)",
            "proj (Linear)",
            "Linear_3 (Linear)",
            "Linear_4 (Linear)",
            "layers.0 (Linear)",
        }, rows
    # two live runs: a renamed module is another module
    renamed = build(
        [
            (
                [Frame.python("train.py", 22, "main"), Frame.module_("net", "MLP"), Frame.op("aten::addmm")],
                {"time_ns": 1.0},
            )
        ]
    )
    rows = {r.key.split(" > ")[-1]: (r.base, r.new) for r in diff(live, renamed, by="tree").rows if r.key}
    assert rows["net (MLP)"] == (0.0, 1.0) and rows["MLP (MLP)"] == (100.0, 0.0)


def test_a_trace_and_a_live_run_compare_python_frames_by_function() -> None:
    # a trace names a function by its def line, or (a frame already running when it began, main here) by the
    # line it was at then; a live run by the lines that ran. Against each other, a function is one row. (And the
    # trace names the script relative to its folder, on sys.path; the live run relative to the working directory.)
    live = build(
        [
            ([Frame.python("scripts/run.py", 39, "main"), Frame.op("aten::addmm")], {"time_ns": 10.0}),
            ([Frame.python("scripts/run.py", 47, "main"), Frame.op("aten::item")], {"time_ns": 1.0}),
        ]
    )
    trace = build(
        [
            ([Frame.python("run.py", 44, "main"), Frame.op("aten::addmm")], {"time_ns": 12.0}),
            ([Frame.python("run.py", 44, "main"), Frame.op("aten::item")], {"time_ns": 1.0}),
        ],
        {"python_lines": "def"},
    )
    for base, new, want in ((live, trace, (10.0, 12.0)), (trace, live, (12.0, 10.0))):
        rows = {r.key: (r.base, r.new) for r in diff(base, new, by="tree").rows}
        assert rows["run.py:44 main > aten::addmm"] == want, rows
        assert sum(1 for k in rows if k.startswith("run.py")) == 3, rows  # main, its addmm, its item
    # two live runs pair their lines by content, as before
    assert {r.key for r in diff(live, live, by="line").rows} == {"scripts/run.py:39", "scripts/run.py:47"}


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("triton_poi_fused_add_mul_0", "triton_poi_fused_add_mul_13"),
        ("graph_0_cpp_fused_gelu_0", "graph_3_cpp_fused_gelu_2"),
        ("void gemm<float, 128>(float const*, int)", "gemm<float, 64>(float const*, int)"),
        ("triton_red_fused_sum_cov463qhi2m2kw6ldmzzijfv5t3cjjkl", "triton_red_fused_sum_abcd1234ef56ab78cd90ef12aa34"),
    ],
)
def test_renamed_kernels_normalise_alike(a: str, b: str) -> None:
    assert normal_kernel(a) == normal_kernel(b)


def test_distinct_kernels_and_copies_stay_distinct() -> None:
    names = ["Memcpy HtoD (Pageable -> Device)", "Memcpy HtoD (Pinned -> Device)", "sm90_xmma_gemm_f16f16_128x256"]
    assert len({normal_kernel(n) for n in names}) == 3


def test_paths_relative_to_cwd_or_site_packages() -> None:
    assert normal_file("/home/a/proj/model.py", "/home/a/proj") == "model.py"
    assert normal_file("/usr/lib/python3/site-packages/transformers/x.py", "/w") == "transformers/x.py"
    assert normal_file("/tmp/torchinductor_root/ab/cabc.py", "/w") == "<inductor generated>"


# --- property: diff(a, a) is all zero -------------------------------------------------------------
_frames = st.one_of(
    st.builds(Frame.python, st.sampled_from(["a.py", "/x/b.py"]), st.integers(1, 50), st.sampled_from(["f", "g"])),
    st.builds(Frame.module_, st.sampled_from(["l0", "l1.attn"]), st.just("Linear")),
    st.builds(Frame.op, st.sampled_from(["aten::mm", "aten::add", "aten::relu"])),
    st.builds(Frame.scope, st.sampled_from(["ProfilerStep#1", "ProfilerStep#2", "fwd"])),
)
_paths = st.lists(
    st.tuples(
        st.lists(_frames, min_size=1, max_size=5),
        st.sampled_from(["", "triton_poi_fused_add_0", "triton_poi_fused_add_1", "sgemm"]),
        st.floats(0, 1e6, allow_nan=False),
    ),
    min_size=1,
    max_size=12,
)


def _profile(paths: list[tuple[list[Frame], str, float]]) -> Profile:
    return build([(frames + ([Frame.kernel(k)] if k else []), {"time_ns": v, "count": 1.0}) for frames, k, v in paths])


@settings(max_examples=60, deadline=None)
@given(_paths, st.sampled_from(["tree", "line", "function", "module", "op", "kernel"]))
def test_diff_of_a_profile_with_itself_is_zero(paths: list[tuple[list[Frame], str, float]], by: str) -> None:
    p = _profile(paths)
    result = diff(p, p, by=by)
    assert all(r.delta == 0 and r.base == r.new for r in result.rows)
    assert result.total.delta == 0
    assert result.total.base == pytest.approx(p.total(result.metric))
    if by != "tree":  # flat rows partition the total
        assert sum(r.base for r in result.rows) == pytest.approx(p.total(result.metric))
    assert not regressions(result, 0.0).tripped


# --- CLI --------------------------------------------------------------------------------------------
def test_fail_above_gates_and_json_follows_the_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base, new = tmp_path / "base.ksprof", tmp_path / "new.ksprof"
    _model(0, 1.0, 0).save(str(base))
    _model(3, 2.0, 7).save(str(new))
    assert main(["diff", str(base), str(base), "--fail-above", "5"]) == 0
    assert main(["diff", str(base), str(new), "--fail-above", "50"]) == 1  # b doubled: +100%
    assert main(["diff", str(base), str(new), "--fail-above", "150"]) == 0
    capsys.readouterr()
    assert main(["diff", str(base), str(new), "--by", "module", "--json", "--fail-above", "50"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == 1 and doc["by"] == "module"
    assert set(doc["rows"][0]) >= {"key", "base", "new", "delta", "delta_pct"}
    assert doc["rows"][0]["key"] == "b" and doc["rows"][0]["delta_pct"] == 100.0
    assert doc["fail_above"]["rows"] == ["b"] and doc["fail_above"]["tripped"]


def test_bad_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = tmp_path / "base.ksprof"
    _model(0, 1.0, 0).save(str(base))
    assert main(["diff", str(base), str(tmp_path / "missing.ksprof")]) == 2
    assert main(["diff", str(base), str(base), "-m", "nope"]) == 2
    assert main(["diff", str(base), str(base), "--fail-above", "-1"]) == 2
    err = capsys.readouterr().err
    assert "no such file" in err and "unknown metric" in err and "Traceback" not in err


# --- live runs: a layer made 2x wider, with lines inserted above it --------------------------------
_MODEL = """import torch


class Net(torch.nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.a = torch.nn.Linear(64, 64)
        self.b = torch.nn.Linear(64, width)
        self.c = torch.nn.Linear(width, 64)

    def forward(self, x):
{inserted}        x = torch.relu(self.a(x))
        x = torch.relu(self.b(x))
        return self.c(x)


net = Net({width})
x = torch.randn(32, 64)
for _ in range(3):
    net(x).sum().backward()
"""


@pytest.mark.slow
def test_live_runs_wider_layer_with_moved_lines_tops_the_diff(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inserted = "        # three lines inserted\n        # above the layers\n        x = x * 1.0\n"
    for name, width, extra in (("base", 128, ""), ("new", 256, inserted)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "model.py").write_text(_MODEL.format(inserted=extra, width=width))
        env = env_without_color()
        env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")])
        cmd = [
            sys.executable,
            "-m",
            "kernelscope",
            "run",
            "--max-overhead",
            "0",
            "-o",
            f"../{name}.ksprof",
            "--no-view",
            "model.py",
        ]
        subprocess.run(cmd, check=True, env=env, cwd=tmp_path / name, capture_output=True)
    base, new = str(tmp_path / "base.ksprof"), str(tmp_path / "new.ksprof")
    # FLOPs are deterministic (time on a shared CPU is not)
    assert main(["diff", base, new, "--by", "line", "-m", "flops", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert {(r["key"], r.get("base_key"), r["delta_pct"]) for r in rows[:2]} == {
        ("model.py:16", "model.py:13", 100.0),
        ("model.py:17", "model.py:14", 100.0),
    }
    assert main(["diff", base, new, "--by", "module", "-m", "flops", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert sorted(r["key"] for r in rows[:2]) == ["b", "c"] and rows[2]["key"] == "a" and rows[2]["delta"] == 0
    assert main(["diff", base, new, "--by", "module", "-m", "flops", "--fail-above", "50"]) == 1


def test_hostile_names_render_escaped_and_deep_stacks_unify(capsys: pytest.CaptureFixture[str]) -> None:
    hostile = "[bold]</script>&" + "k" * 10_000
    deep = [Frame.python("d.py", i, f"f{i}") for i in range(1, 5001)]
    base = build([([Frame.op(hostile), Frame.kernel(hostile)], {"time_ns": 1.0}), (deep, {"time_ns": 2.0})])
    new = build([([Frame.op(hostile), Frame.kernel(hostile)], {"time_ns": 3.0}), (deep, {"time_ns": 2.0})])
    from kernelscope.render.console import make_console
    from kernelscope.render.diff_text import render_diff

    render_diff(make_console(), diff(base, new, by="op"))
    out = capsys.readouterr().out
    assert "[bold]</script>&" in out
    tree = diff(base, new, by="tree")
    assert len(tree.rows) == 5002 and tree.total.delta == 2.0
    deepest = "… > " + " > ".join(f"d.py:{i} f{i}" for i in range(4995, 5001))
    assert sum(r.key == deepest for r in tree.rows) == 1
