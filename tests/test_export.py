"""Exporters (proton, hatchet, folded, speedscope) and the ``export`` verb.

Profiles are built from literals; each format is checked as a whole structure and,
where the consuming tool is installed, read back by that tool: hatchet's
``GraphFrame.from_literal`` always (dev extra), the real ``proton-viewer``
(``triton.profiler.viewer``) when ``triton`` is importable.
"""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernelscope.cli.main import main
from kernelscope.errors import UsageError
from kernelscope.model import Frame, FrameKind, Profile, ProfileBuilder
from kernelscope.render.exporters import Exporter, exporters, find_exporter
from kernelscope.render.exporters.folded import escape

ht = pytest.importorskip("hatchet")

FORMATS = ("folded", "hatchet", "proton", "speedscope")

# --- builders -----------------------------------------------------------------

LINE = Frame.python("train.py", 42, "forward")
QKV = Frame.module_("blocks.0.attn.qkv", "Linear")
ADDMM = Frame.op("aten::addmm")
GEMM = Frame.kernel("sm90_gemm", device="cuda:0", stream=7)
BWD = Frame.backward()
MM = Frame.op("aten::mm")
GEMM_BWD = Frame.kernel("sm90_gemm_bwd", device="cuda:0", stream=7)
STEP = Frame.python("train.py", 50, "step")
FUSED = Frame.kernel("triton_poi_fused_add_gelu_0", device="cuda:0", stream=7)
PART_ADD = Frame.part("aten::add", file="model.py", line=10)
PART_GELU = Frame.part("aten::gelu", file="model.py", line=11)


def sample_profile() -> Profile:
    """
    <root>
      train.py:42 forward              cpu 5
        blocks.0.attn.qkv (Linear)
          aten::addmm                  cpu 20
            sm90_gemm                  time 1000, count 2, flops 4e6, bytes 800
          [backward]
            aten::mm                   cpu 10
              sm90_gemm_bwd            time 2000, count 2, flops 8e6, bytes 1600
      train.py:50 step
        triton_poi_fused_add_gelu_0    time 100 (split 60/40 into parts), count 1
          ~aten::add                   time 60
          ~aten::gelu                  time 40
    """
    b = ProfileBuilder()
    line = b.path([LINE])
    b.add(line, "cpu_time_ns", 5)
    addmm = b.path([QKV, ADDMM], line)
    b.add(addmm, "cpu_time_ns", 20)
    gemm = b.child(addmm, GEMM)
    b.add_many(gemm, {"time_ns": 1000, "count": 2, "flops": 4e6, "bytes": 800})
    mm = b.path([QKV, BWD, MM], line)
    b.add(mm, "cpu_time_ns", 10)
    gemm_bwd = b.child(mm, GEMM_BWD)
    b.add_many(gemm_bwd, {"time_ns": 2000, "count": 2, "flops": 8e6, "bytes": 1600})
    fused = b.path([STEP, FUSED])
    b.add(fused, "count", 1)
    b.add(b.child(fused, PART_ADD), "time_ns", 60)
    b.add(b.child(fused, PART_GELU), "time_ns", 40)
    profile = b.build(metadata={"name": "sample"})
    profile.check()
    return profile


def dumps(fmt: str, profile: Profile) -> str:
    buf = io.StringIO()
    find_exporter(fmt).write(profile, buf)
    return buf.getvalue()


def label_paths(profile: Profile) -> dict[tuple[str, ...], int]:
    """Node of each root-to-node label path (root included, labelled ``<root>``)."""
    out: dict[tuple[str, ...], int] = {}
    for node in range(len(profile)):
        path = ("<root>", *(f.label() for f in profile.path(node)))
        assert path not in out, "test profiles need unique label paths"
        out[path] = node
    return out


def walk_literal(roots: list[dict[str, Any]]) -> Iterator[tuple[tuple[str, ...], dict[str, Any]]]:
    """(names from the root, node) for every node of a literal, without recursion."""
    stack: list[tuple[tuple[str, ...], dict[str, Any]]] = [((r["frame"]["name"],), r) for r in reversed(roots)]
    while stack:
        path, node = stack.pop()
        yield path, node
        for child in reversed(node.get("children", [])):
            stack.append(((*path, child["frame"]["name"]), child))


def deep_json_load(text: str) -> Any:
    """json.loads for very deeply nested text: more recursion and a big thread stack."""
    result: list[Any] = []
    old_limit, old_stack = sys.getrecursionlimit(), threading.stack_size()

    def target() -> None:
        result.append(json.loads(text))

    sys.setrecursionlimit(100_000)
    threading.stack_size(512 * 1024 * 1024)
    try:
        t = threading.Thread(target=target)
        t.start()
        t.join()
    finally:
        threading.stack_size(old_stack)
        sys.setrecursionlimit(old_limit)
    assert result, "json.loads failed on the exported text"
    return result[0]


# --- registry -------------------------------------------------------------------


def test_registry_lists_each_format_once_with_a_suffix() -> None:
    found = {e.name: e.suffix for e in exporters()}
    assert found == {
        "chrome": ".trace.json",
        "folded": ".folded",
        "hatchet": ".hatchet.json",
        "pprof": ".pb.gz",
        "proton": ".proton.json",
        "speedscope": ".speedscope.json",
    }


def test_unknown_format_is_a_usage_error_naming_the_known_ones() -> None:
    with pytest.raises(
        UsageError,
        match=r"unknown export format 'pprof2' \(known: chrome, folded, hatchet, pprof, proton, speedscope\)",
    ):
        find_exporter("pprof2")


# --- proton ---------------------------------------------------------------------


def _proton_node(name: str, metrics: dict[str, Any], *children: dict[str, Any]) -> dict[str, Any]:
    full = {"time (ns)": 0, "count": 0, "cpu_time (ns)": 0, "flops": 0, "bytes": 0, **metrics}
    return {"frame": {"name": name, "type": "function"}, "metrics": full, "children": list(children)}


def _names_and_types_only(literal: Any) -> Any:
    """The literal with frames cut to Proton's own keys (``name``, ``type``)."""
    for _, node in walk_literal([literal[0]]):
        node["frame"] = {k: node["frame"][k] for k in ("name", "type")}
    return literal


def test_proton_literal_is_protons_shape_with_self_values_on_each_node() -> None:
    dev = {"device_id": "0", "device_type": "CUDA"}
    expected = [
        _proton_node(
            "ROOT",
            {},
            _proton_node(
                "train.py:forward@42",
                {"cpu_time (ns)": 5},
                _proton_node(
                    "blocks.0.attn.qkv (Linear)",
                    {},
                    _proton_node(
                        "aten::addmm",
                        {"cpu_time (ns)": 20},
                        _proton_node(
                            "sm90_gemm", {"time (ns)": 1000, "count": 2, "flops": 4000000, "bytes": 800, **dev}
                        ),
                    ),
                    _proton_node(
                        "[backward]",
                        {},
                        _proton_node(
                            "aten::mm",
                            {"cpu_time (ns)": 10},
                            _proton_node(
                                "sm90_gemm_bwd",
                                {"time (ns)": 2000, "count": 2, "flops": 8000000, "bytes": 1600, **dev},
                            ),
                        ),
                    ),
                ),
            ),
            _proton_node(
                "train.py:step@50",
                {},
                _proton_node(
                    "triton_poi_fused_add_gelu_0",
                    {"count": 1, **dev},
                    _proton_node("~aten::add @ model.py:10 (estimated)", {"time (ns)": 60}),
                    _proton_node("~aten::gelu @ model.py:11 (estimated)", {"time (ns)": 40}),
                ),
            ),
        ),
        {},
    ]
    assert _names_and_types_only(json.loads(dumps("proton", sample_profile()))) == expected


def test_proton_device_info_comes_from_metadata_devices_with_protons_fields() -> None:
    b = ProfileBuilder()
    b.add(b.path([Frame.kernel("k", device="rank0/cuda:1")]), "time_ns", 5)
    gpu = {"clock_rate": 1755000, "memory_clock_rate": 2619000, "bus_width": 5120, "arch": "90", "num_sms": 132}
    devices = [{"device": "cuda:1", **gpu}, {"device": "cpu"}, {"device": "cuda:2", "arch": "90"}]
    literal = json.loads(dumps("proton", b.build(metadata={"devices": devices})))
    assert literal[1] == {"CUDA": {"1": gpu}}
    assert literal[0]["children"][0]["metrics"]["device_id"] == "1"


def _read_like_proton_viewer(path: Path) -> Any:
    """The reading steps of proton-viewer's ``read()``: pop device_info, from_literal, inclusive columns."""
    database = json.loads(path.read_text())
    device_info = database.pop(1)
    gf = ht.GraphFrame.from_literal(database)
    gf.update_inclusive_columns()
    return gf, device_info


def _by_path(gf: Any, column: str) -> dict[tuple[str, ...], float]:
    df = gf.dataframe
    return {tuple(n.frame["name"] for n in node.path()): float(df.loc[node, column]) for node in gf.graph.traverse()}


def proton_name(f: Frame) -> str:
    """How Proton names a frame: python frames ``file:function@line``, others by label."""
    return f"{f.file}:{f.name}@{f.line}" if f.kind is FrameKind.PYTHON else f.label()


def _expected_by_path(
    profile: Profile, metric: str, inclusive: bool, root: str = "<root>"
) -> dict[tuple[str, ...], float]:
    values = profile.inclusive(metric) if inclusive else profile.exclusive(metric)
    name = proton_name if root == "ROOT" else Frame.label
    return {(root, *(name(f) for f in profile.path(node))): float(values[node]) for node in range(len(profile))}


def test_proton_read_the_viewers_way_gives_the_profiles_inclusive_time(tmp_path: Path) -> None:
    profile = sample_profile()
    path = tmp_path / "p.proton.json"
    find_exporter("proton").write(profile, path)

    gf, device_info = _read_like_proton_viewer(path)

    assert device_info == {}
    assert sorted(gf.show_metric_columns()) == sorted(
        ["time (ns)", "count", "cpu_time (ns)", "flops", "bytes"]
        + [f"{m} (inc)" for m in ("time (ns)", "count", "cpu_time (ns)", "flops", "bytes")]
    )
    assert _by_path(gf, "time (ns) (inc)") == _expected_by_path(profile, "time_ns", True, root="ROOT")
    assert _by_path(gf, "time (ns)") == _expected_by_path(profile, "time_ns", False, root="ROOT")
    assert _by_path(gf, "flops (inc)")[("ROOT",)] == 12e6
    # the viewer's tflop/s: flops (inc) / (time (ns) (inc) * 1e-9) / 1e12
    root = gf.graph.roots[0]
    tflops = gf.dataframe.loc[root, "flops (inc)"] / (gf.dataframe.loc[root, "time (ns) (inc)"] * 1e-9) / 1e12
    assert tflops == pytest.approx(12e6 / 3100e-9 / 1e12)


@pytest.fixture(scope="module")
def proton_viewer() -> Any:
    return pytest.importorskip("triton.profiler.viewer", reason="triton (proton-viewer) not installed")


def test_real_proton_viewer_reads_the_export(tmp_path: Path, proton_viewer: Any) -> None:
    profile = sample_profile()
    path = tmp_path / "p.proton.json"
    find_exporter("proton").write(profile, path)

    gf, derived = proton_viewer.parse(["time/ns", "tflop/s", "gbyte/s", "cpu_time/ns", "avg_time/ns"], str(path))

    assert derived == ["time/ns (inc)", "tflop/s (inc)", "gbyte/s (inc)", "cpu_time/ns (inc)", "avg_time/ns (inc)"]
    # the viewer converts ns -> s -> ns, so compare with a tolerance
    assert _by_path(gf, "time/ns (inc)") == pytest.approx(_expected_by_path(profile, "time_ns", True, root="ROOT"))
    assert _by_path(gf, "cpu_time/ns (inc)") == pytest.approx(
        _expected_by_path(profile, "cpu_time_ns", True, root="ROOT")
    )
    root = gf.graph.roots[0]
    assert gf.dataframe.loc[root, "tflop/s (inc)"] == pytest.approx(12e6 / 3100e-9 / 1e12)
    assert gf.dataframe.loc[root, "gbyte/s (inc)"] == pytest.approx(2400 / 3100e-9 / 1e9)
    assert gf.dataframe.loc[root, "avg_time/ns (inc)"] == pytest.approx(3100 / 5)


def test_real_proton_viewer_command_prints_the_tree(tmp_path: Path, proton_viewer: Any) -> None:
    path = tmp_path / "p.proton.json"
    find_exporter("proton").write(sample_profile(), path)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run(
        [sys.executable, "-m", "triton.profiler.viewer", "-m", "time/ns", str(path)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout
    assert out.splitlines()[0].split() == ["3100.000", "ROOT"]
    assert "2000.000 sm90_gemm_bwd" in out
    short = subprocess.run(
        [sys.executable, "-m", "triton.profiler.viewer", "-m", "time/ns", "-f", "function_line", str(path)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout
    assert "forward@42" in short and "train.py:forward@42" not in short  # Proton's name format, shortened


# --- hatchet --------------------------------------------------------------------


def test_hatchet_literal_has_exclusive_and_inclusive_columns_and_kind_types() -> None:
    b = ProfileBuilder()
    op = b.path([LINE, ADDMM])
    b.add(op, "cpu_time_ns", 3)
    b.add(b.child(op, GEMM), "time_ns", 7)
    m = {"time": 0, "time (inc)": 7, "cpu_time_ns": 0, "cpu_time_ns (inc)": 3}
    expected = [
        {
            "frame": {"name": "<root>", "type": "root", "ks_kind": "root"},
            "metrics": m,
            "children": [
                {
                    "frame": {
                        "name": "train.py:42 forward",
                        "type": "python",
                        "ks_kind": "python",
                        "ks_name": "forward",
                        "file": "train.py",
                        "line": 42,
                    },
                    "metrics": m,
                    "children": [
                        {
                            "frame": {"name": "aten::addmm", "type": "op", "ks_kind": "op"},
                            "metrics": {**m, "cpu_time_ns": 3},
                            "children": [
                                {
                                    "frame": {
                                        "name": "sm90_gemm",
                                        "type": "kernel",
                                        "ks_kind": "kernel",
                                        "device": "cuda:0",
                                        "stream": 7,
                                    },
                                    "metrics": {"time": 7, "time (inc)": 7, "cpu_time_ns": 0, "cpu_time_ns (inc)": 0},
                                    "children": [],
                                }
                            ],
                        }
                    ],
                }
            ],
        }
    ]
    assert json.loads(dumps("hatchet", b.build())) == expected


def test_hatchet_from_literal_gives_the_profiles_exclusive_and_inclusive_values(tmp_path: Path) -> None:
    profile = sample_profile()
    path = tmp_path / "p.hatchet.json"
    find_exporter("hatchet").write(profile, path)

    gf = ht.GraphFrame.from_literal(json.loads(path.read_text()))

    column = {m: "time" if m == "time_ns" else m for m in profile.metric_names}
    assert sorted(gf.exc_metrics) == sorted(column.values())
    assert sorted(gf.inc_metrics) == sorted(f"{m} (inc)" for m in column.values())
    for metric, col in column.items():
        assert _by_path(gf, col) == _expected_by_path(profile, metric, False)
        assert _by_path(gf, f"{col} (inc)") == _expected_by_path(profile, metric, True)
    gf.update_inclusive_columns()  # hatchet's own sums agree with ours
    assert _by_path(gf, "time (inc)") == _expected_by_path(profile, "time_ns", True)
    assert "sm90_gemm_bwd" in gf.tree()  # hatchet's default metric column ("time") exists


def test_metric_names_that_would_clash_with_hatchet_columns_are_renamed() -> None:
    b = ProfileBuilder()
    node = b.path([Frame.scope("s")])
    for metric in ("name", "node", "x (inc)", "time (ns)"):
        b.add(node, metric, 1)
    b.add(node, "time_ns", 2)
    hatchet_cols = json.loads(dumps("hatchet", b.build()))[0]["metrics"]
    proton_cols = json.loads(dumps("proton", b.build()))[0]["metrics"]
    assert set(hatchet_cols) == {
        "time", "time (inc)", "name_", "name_ (inc)", "node_", "node_ (inc)",
        "time (ns)", "time (ns) (inc)", "x (inc.)", "x (inc.) (inc)",
    }  # fmt: skip
    assert set(proton_cols) == {"time (ns)", "count", "name_", "node_", "time (ns)_2", "x (inc.)"}


# --- folded ---------------------------------------------------------------------


def test_folded_lines_are_paths_with_exclusive_time() -> None:
    assert dumps("folded", sample_profile()).splitlines() == [
        "train.py:42 forward;blocks.0.attn.qkv (Linear);aten::addmm;sm90_gemm 1000",
        "train.py:42 forward;blocks.0.attn.qkv (Linear);[backward];aten::mm;sm90_gemm_bwd 2000",
        "train.py:50 step;triton_poi_fused_add_gelu_0;~aten::add @ model.py:10 (estimated) 60",
        "train.py:50 step;triton_poi_fused_add_gelu_0;~aten::gelu @ model.py:11 (estimated) 40",
    ]


def test_folded_rounds_to_integers_and_drops_zero_lines() -> None:
    b = ProfileBuilder()
    b.add(b.path([Frame.op("a")]), "time_ns", 0.4)
    b.add(b.path([Frame.op("b")]), "time_ns", 2.6)
    b.add(0, "time_ns", 3)
    assert dumps("folded", b.build()) == "<root> 3\nb 3\n"


def test_folded_escapes_separators_newlines_and_percent() -> None:
    assert escape("a;b\nc\rd%e") == "a%3Bb%0Ac%0Dd%25e"


# --- speedscope -------------------------------------------------------------------


def test_speedscope_document_is_one_sampled_profile_of_exclusive_time() -> None:
    doc = json.loads(dumps("speedscope", sample_profile()))
    assert doc == {
        "$schema": "https://www.speedscope.app/file-format-schema.json",
        "shared": {
            "frames": [
                {"name": "sm90_gemm"},
                {"name": "aten::addmm"},
                {"name": "blocks.0.attn.qkv (Linear)"},
                {"name": "train.py:42 forward", "file": "train.py", "line": 42},
                {"name": "sm90_gemm_bwd"},
                {"name": "aten::mm"},
                {"name": "[backward]"},
                {"name": "~aten::add @ model.py:10 (estimated)"},
                {"name": "triton_poi_fused_add_gelu_0"},
                {"name": "train.py:50 step", "file": "train.py", "line": 50},
                {"name": "~aten::gelu @ model.py:11 (estimated)"},
            ]
        },
        "profiles": [
            {
                "type": "sampled",
                "name": "sample (time_ns, exclusive)",
                "unit": "nanoseconds",
                "startValue": 0,
                "endValue": 3100,
                "samples": [[3, 2, 1, 0], [3, 2, 6, 5, 4], [9, 8, 7], [9, 8, 10]],
                "weights": [1000, 2000, 60, 40],
            }
        ],
        "name": "sample",
        "activeProfileIndex": 0,
        "exporter": "kernelscope 0.1.0",
    }


# --- hostile input through every exporter -------------------------------------------

HOSTILE = ("</script><script>alert(1)</script>", "a & b <i>", "x;y;z", "line1\nline2\r\n", "%3B", '"quoted" \\ \t')
LONG_NAME = "k" * 9_990 + "_\u00e9\u4e2d\U0001f600"  # 10,000 characters, non-ASCII at the end


def hostile_profile() -> Profile:
    b = ProfileBuilder()
    for i, name in enumerate(HOSTILE):
        scope = b.child(0, Frame.scope(name))
        op = b.child(scope, Frame.op(name))
        b.add(b.child(op, Frame.kernel(name)), "time_ns", 10 + i)
    b.add(b.path([Frame.python("dir;x/f\n.py", 1, "fn;<&>"), Frame.kernel(LONG_NAME)]), "time_ns", 99)
    return b.build()


def _expected_labels(profile: Profile, fmt: str = "hatchet") -> set[str]:
    name = proton_name if fmt == "proton" else Frame.label
    return {name(f) for f in profile.frames[1:]}


@pytest.mark.parametrize("fmt", ["proton", "hatchet"])
def test_hostile_names_survive_the_literal_formats(fmt: str, tmp_path: Path) -> None:
    profile = hostile_profile()
    path = tmp_path / "out.json"
    find_exporter(fmt).write(profile, path)
    text = path.read_text(encoding="utf-8")
    assert "\n" not in text.rstrip("\n")  # one line: newlines in names are escaped
    literal = json.loads(text)
    names = {p[-1] for p, _ in walk_literal(literal[:1])} - {"ROOT", "<root>"}
    assert names == _expected_labels(profile, fmt)
    gf = ht.GraphFrame.from_literal(literal[:1])
    gf.update_inclusive_columns()
    col = "time (ns) (inc)" if fmt == "proton" else "time (inc)"
    assert float(gf.dataframe.loc[gf.graph.roots[0], col]) == profile.total("time_ns")
    assert set(gf.dataframe["name"]) - {"ROOT", "<root>"} == _expected_labels(profile, fmt)


def test_hostile_names_survive_folded() -> None:
    profile = hostile_profile()
    lines = dumps("folded", profile).split("\n")
    assert lines.pop() == ""
    assert len(lines) == len(HOSTILE) + 1

    def unescape(s: str) -> str:
        return s.replace("%0A", "\n").replace("%0D", "\r").replace("%3B", ";").replace("%25", "%")

    stacks = []
    for line in lines:
        stack, _, value = line.rpartition(" ")
        assert int(value) > 0
        stacks.append([unescape(f) for f in stack.split(";")])
    assert [f"[{n}]" for n in HOSTILE] == [s[0] for s in stacks[:-1]]
    assert all(s[1] == s[2] == n for s, n in zip(stacks, HOSTILE, strict=False))
    assert stacks[-1] == ["dir;x/f\n.py:1 fn;<&>", LONG_NAME]


def test_hostile_names_survive_speedscope() -> None:
    profile = hostile_profile()
    doc = json.loads(dumps("speedscope", profile))
    assert {f["name"] for f in doc["shared"]["frames"]} == _expected_labels(profile)
    assert sum(doc["profiles"][0]["weights"]) == profile.total("time_ns")


def test_hostile_names_survive_the_real_proton_viewer(tmp_path: Path, proton_viewer: Any) -> None:
    profile = hostile_profile()
    path = tmp_path / "p.proton.json"
    find_exporter("proton").write(profile, path)
    gf, _ = proton_viewer.parse(["time/ns"], str(path))
    assert float(gf.dataframe.loc[gf.graph.roots[0], "time/ns (inc)"]) == pytest.approx(profile.total("time_ns"))
    proton_viewer.print_tree(gf, ["time/ns (inc)"])  # renders without error


DEPTH = 5_000


def deep_profile() -> Profile:
    b = ProfileBuilder()
    frames = [Frame.python("deep.py", i, f"f{i}") for i in range(DEPTH - 1)] + [Frame.kernel("leaf")]
    leaf = b.path(frames)
    b.add(leaf, "time_ns", 7)
    b.add(leaf - 1, "time_ns", 3)
    return b.build()


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_5000_deep_stack_exports_without_recursion(fmt: str) -> None:
    text = dumps(fmt, deep_profile())
    if fmt == "folded":
        lines = text.splitlines()
        assert [len(line.rpartition(" ")[0].split(";")) for line in lines] == [DEPTH - 1, DEPTH]
        assert lines[1].endswith(";leaf 7")
        return
    doc = deep_json_load(text)
    if fmt == "speedscope":
        assert [len(s) for s in doc["profiles"][0]["samples"]] == [DEPTH - 1, DEPTH]
        return
    nodes = list(walk_literal(doc[:1]))
    assert len(nodes) == DEPTH + 1
    path, leaf = nodes[-1]
    assert len(path) == DEPTH + 1 and path[-1] == "leaf"
    assert leaf["metrics"]["time (ns)" if fmt == "proton" else "time (inc)"] == 7
    assert nodes[0][1]["metrics"]["time (ns)" if fmt == "proton" else "time (inc)"] == (0 if fmt == "proton" else 10)


# --- properties ---------------------------------------------------------------------


@st.composite
def random_profiles(draw: st.DrawFn) -> Profile:
    b = ProfileBuilder()
    for _ in range(draw(st.integers(1, 30))):
        parent = draw(st.integers(0, len(b) - 1))
        if b.frame_of(parent).kind.value in ("kernel", "part"):
            parent = 0
        node = b.child(parent, Frame.op(draw(st.sampled_from(["a", "b", "c;d", "e\nf"]))))
        b.add(node, "time_ns", draw(st.integers(0, 10**12)))
    return b.build()


@settings(max_examples=50, deadline=None)
@given(random_profiles())
def test_every_format_accounts_for_all_exclusive_time(profile: Profile) -> None:
    total = profile.total("time_ns")
    proton = json.loads(dumps("proton", profile))
    assert sum(n["metrics"]["time (ns)"] for _, n in walk_literal(proton[:1])) == total
    hatchet = json.loads(dumps("hatchet", profile))
    assert hatchet[0]["metrics"]["time (inc)"] == total
    assert sum(n["metrics"]["time"] for _, n in walk_literal(hatchet)) == total
    for fmt in ("proton", "hatchet"):
        assert _reimported(fmt, profile) == _by_frames(profile)
    assert sum(int(line.rpartition(" ")[2]) for line in dumps("folded", profile).splitlines()) == total
    assert sum(json.loads(dumps("speedscope", profile))["profiles"][0]["weights"]) == total


# --- round trips through our own literal formats ---------------------------------


def _by_frames(profile: Profile) -> dict[tuple[Frame, ...], dict[str, float]]:
    """Every node's non-zero exclusive metrics, keyed by its frame path."""
    out: dict[tuple[Frame, ...], dict[str, float]] = {}
    for node in range(len(profile)):
        values = {m: float(profile.exclusive(m)[node]) for m in profile.metric_names if profile.exclusive(m)[node]}
        if values:
            out[tuple(profile.path(node))] = values
    return out


def _reimported(fmt: str, profile: Profile) -> dict[tuple[Frame, ...], dict[str, float]]:
    from kernelscope.importers import import_file

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, f"p{find_exporter(fmt).suffix}")
        find_exporter(fmt).write(profile, path)
        back = import_file(path)
    back.check()
    return _by_frames(back)


@pytest.mark.parametrize("fmt", ["proton", "hatchet"])
def test_literal_exports_import_back_to_the_same_profile(fmt: str) -> None:
    # frames keep their kind and fields; no metric is doubled (hatchet's m and m (inc)) or invented
    for profile in (sample_profile(), hostile_profile()):
        assert _reimported(fmt, profile) == _by_frames(profile)


def test_hatchet_to_literal_output_imports_without_doubling_or_nid_metrics(tmp_path: Path) -> None:
    profile = sample_profile()
    path = tmp_path / "p.hatchet.json"
    find_exporter("hatchet").write(profile, path)
    gf = ht.GraphFrame.from_literal(json.loads(path.read_text()))
    gf.update_inclusive_columns()
    again = tmp_path / "again.hatchet.json"
    again.write_text(json.dumps(gf.to_literal(), default=float))  # hatchet's own writer: m, m (inc), maybe _hatchet_nid
    from kernelscope.importers import import_file

    back = import_file(str(again))
    assert sorted(back.metrics) == sorted(profile.metrics)
    assert back.total("time_ns") == profile.total("time_ns")
    assert {f.kind for f in back.frames} == {f.kind for f in profile.frames}


# --- writing and the CLI ----------------------------------------------------------------


def test_a_failing_export_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old")

    def broken(profile: Profile, fh: Any) -> None:
        fh.write("half")
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        Exporter("broken", "", ".txt", broken).write(sample_profile(), target)
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_exported_files_get_ordinary_permissions(tmp_path: Path) -> None:
    target = tmp_path / "out.folded"
    find_exporter("folded").write(sample_profile(), target)
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    path = tmp_path / "run.ksprof"
    sample_profile().save(str(path))
    return path


@pytest.mark.parametrize("fmt", [*FORMATS, "chrome"])
def test_cli_export_writes_each_format(fmt: str, saved: Path, tmp_path: Path) -> None:
    out = tmp_path / f"out{find_exporter(fmt).suffix}"
    assert main(["export", str(saved), "--format", fmt, "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == dumps(fmt, sample_profile())


def test_cli_export_to_stdout(saved: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", str(saved), "-f", "folded", "-o", "-"]) == 0
    assert capsys.readouterr().out == dumps("folded", sample_profile())


def _one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    return err


def test_cli_unknown_format_exits_2_with_one_line(
    saved: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.x"
    assert main(["export", str(saved), "--format", "nope", "-o", str(out)]) == 2
    assert (
        "unknown export format 'nope' (known: chrome, folded, hatchet, pprof, proton, speedscope)"
        in _one_line_error(capsys)
    )
    assert not out.exists()


@pytest.mark.parametrize(
    ("make_args", "message"),
    [
        (lambda saved, tmp: [str(tmp / "missing.ksprof"), "-f", "proton", "-o", str(tmp / "o")], "no such file"),
        (lambda saved, tmp: [str(saved), "-f", "proton", "-o", str(tmp / "no" / "dir" / "o")], "cannot write"),
        (lambda saved, tmp: [str(saved), "-o", str(tmp / "o")], "--format"),
    ],
)
def test_cli_bad_input_or_usage_exits_2_with_one_line(
    make_args: Callable[[Path, Path], list[str]],
    message: str,
    saved: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["export", *make_args(saved, tmp_path)]) == 2
    assert message in _one_line_error(capsys)


@pytest.mark.traces
@pytest.mark.parametrize("fmt", ["proton", "hatchet"])
def test_a_real_trace_round_trips_exactly(fmt: str, shared_traces: Path) -> None:
    from kernelscope.inputs import open_profile

    profile = open_profile(str(shared_traces / "hta_a100_alexnet_cuda_sync.json.gz"))
    assert _reimported(fmt, profile) == _by_frames(profile)
