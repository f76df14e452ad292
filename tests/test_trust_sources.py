"""Sources come only from the program's roots: hostile traces name /proc/self/environ, /etc/passwd, ../../
paths and symlinks out of the project, and neither the report nor the MCP ``source`` tool copies them out."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from kernelscope.cli.main import main
from kernelscope.render.report.payload import build_payload
from kernelscope.trust.sources import SourceRoots

SECRET = "MYTOKEN=supersecret123"


def X(cat: str, name: str, ts: float, dur: float, **args: Any) -> dict[str, Any]:
    ev: dict[str, Any] = {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur}
    if args:
        ev["args"] = args
    return ev


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A project folder (the current folder) with its own train.py, a secret outside it, a symlink inside it
    pointing at the secret, and a trace whose frames name all of them and the system's files."""
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.txt"
    secret.write_text(f"line one\n{SECRET}\nline three\n")
    proj = tmp_path / "proj"
    (proj / "sub").mkdir(parents=True)
    (proj / "train.py").write_text("".join(f"step_{i} = {i}  # own code\n" for i in range(1, 11)))
    (proj / "link.py").symlink_to(secret)
    (proj / ".ssh").mkdir()
    (proj / ".ssh" / "id.py").write_text(f"{SECRET}\n")
    (proj / "fifo.py").unlink(missing_ok=True)
    os.mkfifo(proj / "fifo.py")
    monkeypatch.setenv("MYTOKEN", "supersecret123")
    monkeypatch.chdir(proj)
    files = [
        "/proc/self/environ(1)",
        "/etc/passwd(3)",
        "../../../../../../etc/hostname(1)",
        f"{secret}(2)",
        "../outside/secret.txt(2)",
        "link.py(2)",
        ".ssh/id.py(1)",
        "fifo.py(1)",
        "/dev/zero(1)",
        "train.py(5)",
    ]
    events = []
    for i, where in enumerate(files):
        t = i * 100.0
        events.append(X("python_function", f"{where}: f{i}", t, 90))
        events.append(X("cpu_op", f"aten::op{i}", t + 10, 50, **{"External id": i}))
    trace = tmp_path / "hostile.json"
    trace.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return {"proj": proj, "trace": trace, "secret": secret}


def _sources_of(report: Path) -> dict[str, Any]:
    from test_report import embedded_data  # the report's own reader

    data: dict[str, Any] = embedded_data(report.read_text())
    return dict(data["sources"])


def test_report_embeds_the_projects_own_file_and_nothing_else(project: dict[str, Path], capsys: Any) -> None:
    out = project["proj"] / "r.html"
    assert main(["report", str(project["trace"]), "-o", str(out)]) == 0
    sources = _sources_of(out)
    assert list(sources) == ["train.py"]  # the project's file only; its lines are there
    assert "step_5 = 5  # own code" in sources["train.py"][0]
    page = out.read_text()
    assert "supersecret" not in page and "root:x:" not in page


def test_report_source_root_widens_to_the_folder_named(project: dict[str, Path]) -> None:
    out = project["proj"] / "r.html"
    outside = str(project["secret"].parent)
    assert main(["report", str(project["trace"]), "-o", str(out), "--source-root", outside]) == 0
    sources = _sources_of(out)
    assert str(project["secret"]) in sources and "train.py" not in sources  # only the folders named
    assert main(["report", str(project["trace"]), "-o", str(out), "--source-root", "/"]) == 0
    page = out.read_text()
    assert "supersecret123|" not in page and "MYTOKEN" not in page.split(str(project["secret"]))[0]
    assert "/proc/self/environ" not in _sources_of(out) and "fifo.py" not in _sources_of(out)


def test_roots_refuse_system_trees_symlinks_out_and_credentials(project: dict[str, Path]) -> None:
    roots = SourceRoots.here()
    assert roots.read("train.py") is not None and roots.read(str(project["proj"] / "train.py")) is not None
    for name in ["/proc/self/environ", "/etc/passwd", "../outside/secret.txt", "link.py", ".ssh/id.py",
                 "fifo.py", "/dev/zero", "sub", ".", "", "train.py\x00x"]:  # fmt: skip
        assert roots.read(name) is None, name
    everything = SourceRoots.of(["/"])
    assert everything.read("/proc/self/environ") is None and everything.read("/dev/zero") is None
    assert everything.read(str(project["secret"])) is not None


def test_payload_default_is_the_current_folder(project: dict[str, Path]) -> None:
    from kernelscope.importers import import_file

    p = import_file(str(project["trace"]))
    assert list(build_payload(p)["sources"]) == ["train.py"]
    assert build_payload(p, roots=SourceRoots.of([project["secret"].parent]))["sources"].keys() == {
        str(project["secret"]),
        "../outside/secret.txt",
    }


def test_mcp_source_returns_only_files_under_the_roots(project: dict[str, Path]) -> None:
    pytest.importorskip("mcp")
    from kernelscope.mcp.tools import profiles as tools

    prof = project["proj"] / "leak.ksprof"
    assert main(["import", str(project["trace"]), "-o", str(prof)]) == 0
    own = tools.source(str(prof), key="train.py:5", context=50)
    assert own["source_available"] and any("step_5" in r["text"] for r in own["lines"])
    for key in ["/etc/passwd:3", "/proc/self/environ:1", f"{project['secret']}:2", "link.py:2", ".ssh/id.py:1"]:
        doc = tools.source(str(prof), key=key, context=50)
        assert not doc["source_available"] and doc["lines"] == [] and doc["resolved"] is None, key
        assert "supersecret" not in json.dumps(doc) and "root:x" not in json.dumps(doc)
