"""The HTML report without a browser: the embedded data, its escaping, compression and the ``report`` verb."""

from __future__ import annotations

import base64
import gzip
import json
import os
import re
from pathlib import Path

import pytest

from conftest import build
from kernelscope.cli.main import main
from kernelscope.model import Frame, FrameKind, Profile
from kernelscope.render.report import render_report, write_report
from kernelscope.render.report.html import data_element, script_json
from kernelscope.render.report.payload import build_payload

HOSTILE_KERNEL = "</script><img src=x onerror=alert(1)>"
LONG_NAME = "k" * 10_000


def small_profile(tmp_path: Path | None = None) -> Profile:
    line = Frame.python("train.py", 3, "forward")
    return build(
        [
            (
                [line, Frame.module_("fc", "Linear"), Frame.op("aten::addmm"), Frame.kernel("gemm", "cuda:0", 7)],
                {"time_ns": 1000.0, "count": 2, "flops": 4e6},
            ),
            (
                [line, Frame.op("aten::add & co"), Frame.kernel(HOSTILE_KERNEL, "cuda:0", 7)],
                {"time_ns": 300.0, "count": 1},
            ),
            ([Frame.scope(LONG_NAME)], {"time_ns": 5.0}),
        ],
        {"command": ["python", "train.py"], "host": "box", "devices": [{"name": "GPU <b>"}]},
    )


def embedded_data(page: str) -> dict:
    m = re.search(r'<script type="application/(json|octet-stream)" id="ks-data"[^>]*>(.*?)</script>', page, re.S)
    assert m is not None
    if m.group(1) == "json":
        return json.loads(m.group(2))
    return json.loads(gzip.decompress(base64.b64decode(m.group(2))))


def test_payload_is_the_profile_columns_and_groups() -> None:
    p = small_profile()
    data = build_payload(p, sources=False)
    assert data["parent"] == p.parent.tolist()
    assert data["frame"] == p.frame.tolist()
    assert data["metrics"]["time_ns"] == [int(v) for v in p.exclusive("time_ns")]
    assert data["frames"]["label"] == [f.label() for f in p.frames]
    op = data["groups"]["op"]
    keyed = {op["keys"][k] for k in op["node"] if k >= 0}
    assert keyed == {"aten::addmm", "aten::add & co"}
    assert data["header"]["command"] == "python train.py"
    assert data["header"]["time_meaning"].startswith("time_ns is accelerator kernel time")


def test_a_compiled_region_shows_its_torch_compile_line() -> None:
    region = Frame(FrameKind.REGION, "MLP.forward", file="train.py", line=17, cls="torch.compile")
    p = build([([Frame.python("train.py", 22, "main"), region, Frame.op("aten::addmm")], {"time_ns": 5.0})])
    labels = build_payload(p, sources=False)["frames"]["label"]
    assert "<torch.compile(MLP.forward)> @ train.py:17" in labels


def test_hostile_names_cannot_close_the_data_element() -> None:
    page = render_report(small_profile())
    # the only script elements are the data and the page's code; no name makes another
    assert page.count("<script") == 2
    assert "<img" not in page
    assert HOSTILE_KERNEL not in page
    data = embedded_data(page)
    assert HOSTILE_KERNEL in data["frames"]["label"]
    assert f"[{LONG_NAME}]" in data["frames"]["label"]
    assert "\\u003c/script\\u003e" in script_json(["</script>"])
    assert json.loads(script_json(["a\u2028b &amp; <x>"])) == ["a\u2028b &amp; <x>"]


def test_large_data_is_compressed_and_reads_back() -> None:
    data = {"big": ["x" * 100] * 100}
    small = data_element(data, compress_above=10**9)
    packed = data_element(data, compress_above=100)
    assert 'data-encoding="gzip+base64"' in packed and len(packed) < len(small)
    assert embedded_data(packed) == data == embedded_data(small)


def test_no_network_reference_in_the_page() -> None:
    page = render_report(small_profile())
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert not re.search(r"(src|href)=[\"']?(https?:)?//", page)
    assert "http://" not in page.replace("http://www.w3.org", "") and "https://" not in page


def test_sources_are_captured_with_cost_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "train.py").write_text("import torch\n\ndef forward(x):\n    return x\n")
    monkeypatch.chdir(tmp_path)
    data = build_payload(small_profile(), sources=True)
    assert data["sources"] == {"train.py": [[1, "import torch", "", "def forward(x):", "    return x"]]}


def test_advisor_failure_still_writes_a_report(monkeypatch: pytest.MonkeyPatch) -> None:
    import kernelscope.analysis.advisor as advisor

    def broken(profile: Profile, only: set[str] | None = None) -> list:
        raise RuntimeError("rule exploded")

    monkeypatch.setattr(advisor, "run_rules", broken)
    data = embedded_data(render_report(small_profile()))
    assert data["findings"] == [] and "rule exploded" in data["findings_error"]


def test_deep_stack_payload(tmp_path: Path) -> None:
    frames = [Frame.python("deep.py", i + 1, f"f{i}") for i in range(5000)]
    p = build([(frames, {"time_ns": 1.0})])
    out = tmp_path / "deep.html"
    write_report(p, out)
    data = embedded_data(out.read_text())
    assert len(data["parent"]) == 5001 and data["parent"][-1] == 4999


def test_report_verb_writes_and_reports_bad_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prof = tmp_path / "p.ksprof"
    small_profile().save(str(prof))
    out = tmp_path / "r.html"
    assert main(["report", str(prof), "-o", str(out)]) == 0
    assert embedded_data(out.read_text())["header"]["host"] == "box"
    capsys.readouterr()
    assert main(["report", str(prof), "-o", str(tmp_path / "missing" / "r.html")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot write" in err[0]
    assert main(["report", str(tmp_path / "nope.ksprof"), "-o", str(out)]) == 2
    assert sorted(os.listdir(tmp_path)) == ["p.ksprof", "r.html"]
