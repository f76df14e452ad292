"""Bounded reading: archive members, decompressed streams and single strings have caps named in one
line; FIFOs, devices and folders given as input are refused at once; damaged profiles are one line."""

from __future__ import annotations

import gzip
import io
import json
import os
import threading
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import build
from kernelscope.cli.main import main
from kernelscope.errors import BadInputError
from kernelscope.model import Frame, load
from kernelscope.trust import limits


def _profile(tmp_path: Path, timeline: bool = True) -> Path:
    from kernelscope.model.timeline import Category, TimelineBuilder

    tb = TimelineBuilder()
    if timeline:
        tb.add(node=2, track=tb.track("stream 7", "cuda:0"), start_ns=0, dur_ns=10, category=Category.KERNEL)
    p = build([([Frame.python("t.py", 1, "f"), Frame.op("aten::mm")], {"time_ns": 10.0, "count": 1})])
    if timeline:
        p = type(p)(p.frames, p.parent, p.frame, p.metrics, p.metadata, tb.build())
    out = tmp_path / "good.ksprof"
    p.save(out)
    return out


def _rewrite(src: Path, dst: Path, **members: bytes) -> Path:
    """A copy of the profile ``src`` with some members replaced (deflated, as kernelscope writes them)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", compression=zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            zout.writestr(info.filename, members.pop(info.filename, zin.read(info.filename)))
        for name, data in members.items():
            zout.writestr(name, data)
    return dst


def _npy(a: np.ndarray[Any, Any]) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


def test_inflating_member_stops_at_its_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    good = _profile(tmp_path)
    monkeypatch.setattr("kernelscope.model.io.MAX_METADATA_BYTES", 1 << 20)  # the same code path, a small cap
    bomb = _rewrite(good, tmp_path / "bomb.ksprof", **{"metadata.json": b"{" + b" " * (8 << 20) + b"}"})
    assert bomb.stat().st_size < 100_000
    with pytest.raises(BadInputError, match=r"member metadata.json: larger than kernelscope reads \(1 MiB\)"):
        load(bomb)
    assert main(["view", str(bomb)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "metadata.json" in err


@pytest.mark.parametrize(
    ("member", "data", "words"),
    [
        ("metadata.json", b"[1, 2]", "metadata.json is a list"),
        ("frames.json", b'[{"kind": "op", "name": 5}]', "frame's name is int"),
        ("frames.json", b'[{"kind": "bogus"}]', "unknown frame kind"),
        ("frames.json", b'{"a": 1}', "a dict where a list belongs"),
        ("header.json", b'{"format": "kernelscope-profile", "schema": 1, "metrics": 3}', "metrics is not a list"),
        ("timeline/node.npy", _npy(np.array([1_000_000], np.int32)), "names a node that does not exist"),
        ("timeline/track.npy", _npy(np.array([9], np.int32)), "names a track that does not exist"),
        ("timeline/category.npy", _npy(np.array([77], np.int8)), "unknown category"),
        ("nodes/parent.npy", _npy(np.array([[-1, 0, 1]], np.int32)), "not a column of numbers"),
        ("metrics/0.npy", _npy(np.array(["a", "b", "c"])), "not a column of numbers"),
    ],
)
def test_damaged_profile_is_one_line(tmp_path: Path, member: str, data: bytes, words: str, capsys: Any) -> None:
    bad = _rewrite(_profile(tmp_path), tmp_path / "bad.ksprof", **{member: data})
    with pytest.raises(BadInputError, match=words):
        load(bad)
    for verb in (["view"], ["analyze"], ["timeline"], ["view", "--by", "line"]):
        assert main([verb[0], str(bad), *verb[1:]]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "corrupt kernelscope profile" in err and "Traceback" not in err


def test_huge_name_in_a_small_gzip_trace_stops_at_the_event_cap(tmp_path: Path, capsys: Any) -> None:
    name = "k" * (limits.MAX_EVENT_BYTES + (1 << 20))
    events = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 5},
              {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": 10, "dur": 5}]  # fmt: skip
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"traceEvents": events}).encode(), compresslevel=1))
    assert path.stat().st_size < 1 << 20
    assert main(["view", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "over 32 MiB" in err


def test_gunzip_capped_is_gzip_decompress_below_the_cap(tmp_path: Path) -> None:
    data = os.urandom(3000) + b"x" * 100_000
    two = gzip.compress(data) + gzip.compress(b"tail")
    assert limits.gunzip_capped(two, "p", cap=200_000) == gzip.decompress(two)
    with pytest.raises(BadInputError, match=r"p: decompresses to more than kernelscope reads"):
        limits.gunzip_capped(gzip.compress(b"\0" * 300_000), "p", cap=200_000)
    with pytest.raises(EOFError):
        limits.gunzip_capped(gzip.compress(data)[:-20], "p")


def _fifo(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("name", ["p.ksprof", "t.json", "t.json.gz", "x.xplane.pb", "noext"])
@pytest.mark.parametrize("verb", ["view", "import", "report"])
def test_a_fifo_is_refused_at_once(tmp_path: Path, name: str, verb: str, capsys: Any) -> None:
    fifo = _fifo(tmp_path, name)
    argv = [verb, str(fifo)] + (["-o", str(tmp_path / "out")] if verb in ("import", "report") else [])
    done: list[int] = []
    worker = threading.Thread(target=lambda: done.append(main(argv)), daemon=True)
    worker.start()
    worker.join(20)
    if not done:  # unblock the reader so the thread ends, then fail
        with open(fifo, "wb"):
            pass
        pytest.fail(f"{verb} blocked on a FIFO")
    assert done == [2]
    assert "is a FIFO (named pipe), not a file" in capsys.readouterr().err


def test_a_device_is_refused(capsys: Any) -> None:
    assert main(["view", "/dev/zero"]) == 2
    assert "is a device, not a file" in capsys.readouterr().err


def test_mcp_summary_refuses_a_fifo(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    from kernelscope.mcp.failure import ToolFailure
    from kernelscope.mcp.tools import profiles as tools

    fifo = _fifo(tmp_path, "p.ksprof")
    with pytest.raises(ToolFailure, match="FIFO"):
        tools.summary(str(fifo))
