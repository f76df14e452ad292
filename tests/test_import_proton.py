"""Proton/hatchet literal importer: literals built in the test, compared as whole trees."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kernelscope.errors import BadInputError
from kernelscope.importers import find_importer, import_file
from kernelscope.importers.proton import metric_of
from kernelscope.model import Profile


def node(name: str, metrics: dict[str, Any] | None = None, children: list[Any] | None = None) -> dict[str, Any]:
    return {"frame": {"name": name, "type": "function"}, "metrics": metrics or {}, "children": children or []}


def tree(p: Profile, metrics: tuple[str, ...]) -> Any:
    def walk(n: int) -> Any:
        vals = {m: float(p.exclusive(m)[n]) for m in metrics if p.exclusive(m)[n]}
        return (p.frame_of(n).kind.value, p.frame_of(n).label(), vals, sorted(walk(k) for k in p.children[n]))

    return walk(0)


def write(tmp_path: Path, doc: Any, name: str = "p.hatchet") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


PROTON = [
    node("ROOT", {"count": 0, "time (ns)": 0, "flops16": 0, "bytes": 0}, [
        node("model.py:forward@12", {}, [
            node("matmul_kernel", {"count": 3, "time (ns)": 3000, "flops16": 1e9, "bytes": 4096, "device_id": 0,
                                   "device_type": "CUDA"}),
        ]),
        node("train_step", {}, [node("add_kernel", {"count": 1, "time (ns)": 500, "device_id": "0"})]),
    ]),
    {"CUDA": {"0": {"arch": "90", "num_sms": 132, "clock_rate": 1755000}}},
]  # fmt: skip


def test_proton_literal_becomes_the_same_tree(tmp_path: Path) -> None:
    # given a Proton profile [root, device_info]
    path = write(tmp_path, PROTON)
    # when imported
    p = import_file(path)
    # then ROOT is our root, python frames are parsed, device leaves are kernels, metrics are kept per node
    p.check()
    assert tree(p, ("time_ns", "count", "flops", "flops16", "bytes")) == (
        "root", "<root>", {}, [
            ("python", "model.py:12 forward", {}, [
                ("kernel", "matmul_kernel",
                 {"time_ns": 3000.0, "count": 3.0, "flops": 1e9, "flops16": 1e9, "bytes": 4096.0}, []),
            ]),
            ("scope", "[train_step]", {}, [("kernel", "add_kernel", {"time_ns": 500.0, "count": 1.0}, [])]),
        ],
    )  # fmt: skip
    # Proton's device_info in the one device shape (model.devices)
    assert p.metadata["devices"] == [
        {"id": "cuda:0", "type": "cuda", "index": 0, "arch": "sm_90", "sms": 132, "clock_khz": 1755000}
    ]
    assert p.metadata["source"]["format"] == "proton"
    assert find_importer(path).name == "proton"


def test_inclusive_metrics_are_made_exclusive(tmp_path: Path) -> None:
    lit = node("main", {"time (inc)": 10.0}, [node("a", {"time (inc)": 4.0}), node("b", {"time (inc)": 5.0})])
    p = import_file(write(tmp_path, [lit]))
    assert tree(p, ("time_ns",)) == (
        "root", "<root>", {}, [
            ("scope", "[main]", {"time_ns": 1.0}, [
                ("kernel", "a", {"time_ns": 4.0}, []),
                ("kernel", "b", {"time_ns": 5.0}, []),
            ]),
        ],
    )  # fmt: skip
    assert p.inclusive("time_ns")[0] == 10.0


def test_hatchet_list_of_roots_and_units(tmp_path: Path) -> None:
    lit = [node("foo", {"time (us)": 2.0}), node("bar", {"time (ms)": 1.0, "mystery metric": 7})]
    p = import_file(write(tmp_path, lit, "h.json"))
    assert tree(p, ("time_ns", "mystery_metric")) == (
        "root", "<root>", {}, [
            ("scope", "[bar]", {"time_ns": 1e6, "mystery_metric": 7.0}, []),
            ("scope", "[foo]", {"time_ns": 2000.0}, []),
        ],
    )  # fmt: skip


def test_metric_names() -> None:
    assert metric_of("time (ns)") == ("time_ns", 1.0, False)
    assert metric_of("time (s) (inc)") == ("time_ns", 1e9, True)
    assert metric_of("flops8") == ("flops8", 1.0, False)
    assert metric_of("_hatchet_nid") is None
    assert metric_of("device_id") is None


def test_very_deep_literal_does_not_recurse(tmp_path: Path) -> None:
    depth = 3000
    opening = "".join(f'{{"frame": {{"name": "f{i}"}}, "metrics": {{}}, "children": [' for i in range(depth))
    text = "[" + opening + json.dumps(node("leaf", {"time (ns)": 1})) + "]}" * depth + "]"
    path = tmp_path / "deep.hatchet"
    path.write_text(text)
    try:
        p = import_file(str(path))
    except BadInputError as exc:  # a decoder depth limit is an acceptable, clear refusal
        assert "nested too deeply" in str(exc) or "malformed" in str(exc)
    else:
        assert len(p) == 3002
        assert p.total("time_ns") == 1.0


@pytest.mark.parametrize(
    "content",
    ['[{"frame": {"name": "x"}, "metrics": {}, "children": []', '{"frame": 1, "children": [', "[]", '[{"a": 1}]'],
)
def test_bad_proton_input_is_bad_input(tmp_path: Path, content: str) -> None:
    path = tmp_path / "bad.hatchet"
    path.write_text(content)
    with pytest.raises(BadInputError):
        import_file(str(path))


# --- Proton's own files, read as proton-viewer reads them -----------------------------------------

PROTON_WITH_METADATA = [
    node("ROOT", {"count": 0, "time (ns)": 0}, [
        node("model.py:forward@12", {}, [
            node("matmul_kernel", {"count": 2, "time (ns)": 2000, "flops8": 10, "flops16": 7, "bytes": 100,
                                   "device_id": "0",
                                   "device_type": "CUDA"}),
            node("__proton_launch_metadata", {}, [node("meta_kernel", {"count": 1, "time (ns)": 40})]),
        ]),
        node("only_meta", {"count": 5, "time (ns)": 5}, [node("__proton_launch_metadata:k", {"count": 1})]),
        node("empty_leaf", {}, []),
    ]),
    {"CUDA": {"0": {"arch": "90", "num_sms": 132, "clock_rate": 1755000, "memory_clock_rate": 2619000,
                    "bus_width": 5120}}},
]  # fmt: skip


def _viewer_by_path(path: str, column: str) -> dict[tuple[str, ...], float]:
    viewer = pytest.importorskip("triton.profiler.viewer", reason="triton (proton-viewer) not installed")
    gf = viewer.read(path)[0]
    df = gf.dataframe
    return {tuple(n.frame["name"] for n in nd.path()): float(df.loc[nd, column]) for nd in gf.graph.traverse()}


def _ours_by_path(p: Profile, metric: str) -> dict[tuple[str, ...], float]:
    inc = p.inclusive(metric)
    proton = {"python": lambda f: f"{f.file}:{f.name}@{f.line}"}

    def name(f: Any) -> str:
        return proton.get(f.kind.value, lambda f: f.name)(f)

    return {("ROOT", *(name(f) for f in p.path(n))): float(inc[n]) for n in range(len(p))}


def test_proton_file_imports_as_proton_viewer_reads_it(tmp_path: Path) -> None:
    path = write(tmp_path, PROTON_WITH_METADATA, "p.json")
    p = import_file(path)
    p.check()
    # launch-metadata subtrees, empty leaves and parents left without children are gone, as in the viewer
    assert _ours_by_path(p, "time_ns") == {
        ("ROOT",): 2000.0, ("ROOT", "model.py:forward@12"): 2000.0, ("ROOT", "model.py:forward@12", "matmul_kernel"): 2000.0,
    }  # fmt: skip
    assert p.total("flops8") == 10 and p.total("flops16") == 7 and p.total("flops") == 17
    assert p.metadata["devices"][0]["bus_bits"] == 5120
    assert _viewer_by_path(path, "time (ns) (inc)") == _ours_by_path(p, "time_ns")


def test_proton_file_round_trips_through_our_proton_export(tmp_path: Path) -> None:
    from kernelscope.render.exporters import find_exporter

    p = import_file(write(tmp_path, PROTON_WITH_METADATA, "p.json"))
    out = tmp_path / "again.json"
    find_exporter("proton").write(p, out)
    doc = json.loads(out.read_text())
    assert doc[1] == PROTON_WITH_METADATA[1]  # device_info written back from the profile's devices
    back = import_file(str(out))
    for metric in ("time_ns", "count", "flops", "flops8", "flops16"):
        assert back.total(metric) == p.total(metric)
    assert [f.kind for f in back.frames] == [f.kind for f in p.frames]
    assert _viewer_by_path(str(out), "time (ns) (inc)") == _ours_by_path(p, "time_ns")


def test_proton_viewer_util_works_on_the_re_exported_file(tmp_path: Path) -> None:
    viewer = pytest.importorskip("triton.profiler.viewer", reason="triton (proton-viewer) not installed")
    from kernelscope.render.exporters import find_exporter

    out = tmp_path / "again.json"
    find_exporter("proton").write(import_file(write(tmp_path, PROTON_WITH_METADATA, "p.json")), out)
    gf, metrics = viewer.parse(["util"], str(out))
    assert metrics == ["util"] or metrics == ["util (inc)"]
    util = gf.dataframe[metrics[0]].dropna()
    assert len(util) == 1 and float(util.iloc[0]) > 0  # the kernel's utilisation, from device_info's peaks


def test_frames_that_cannot_nest_are_skipped_with_a_warning(tmp_path: Path) -> None:
    bad = {"frame": {"name": "k", "ks_kind": "kernel"}, "metrics": {"time": 5},
           "children": [{"frame": {"name": "op", "ks_kind": "op"}, "metrics": {"time": 7}, "children": []}]}  # fmt: skip
    p = import_file(write(tmp_path, [bad]))
    p.check()
    assert p.total("time_ns") == 5
    assert sum(p.metadata["import_warnings"].values()) == 1


def test_older_kernelscope_hatchet_files_keep_their_kinds(tmp_path: Path) -> None:
    old = {"frame": {"name": "<root>", "type": "root"}, "metrics": {"time_ns": 0, "time_ns (inc)": 3}, "children": [
        {"frame": {"name": "t.py:3 fwd", "type": "python", "file": "t.py", "line": 3}, "metrics": {"time_ns": 0},
         "children": [{"frame": {"name": "aten::mm", "type": "op"}, "metrics": {"time_ns": 0}, "children": [
             {"frame": {"name": "gemm", "type": "kernel"}, "metrics": {"time_ns": 3, "time_ns (inc)": 3},
              "children": []}]}]}]}  # fmt: skip
    p = import_file(write(tmp_path, [old]))
    assert tree(p, ("time_ns",)) == (
        "root", "<root>", {}, [("python", "t.py:3 fwd", {}, [
            ("op", "aten::mm", {}, [("kernel", "gemm", {"time_ns": 3.0}, [])])])],
    )  # fmt: skip
