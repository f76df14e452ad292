"""``export --format pprof``: read back by ``go tool pprof`` (Debian's golang-go) and ``protoc --decode_raw``."""

from __future__ import annotations

import gzip
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import build
from kernelscope.cli.main import main
from kernelscope.model import Frame, Profile
from kernelscope.render.exporters import find_exporter
from kernelscope.render.exporters.pprof import encode_message

GO = shutil.which("go")
PROTOC = shutil.which("protoc")
needs_go = pytest.mark.skipif(GO is None, reason="go is not installed (apt-get install golang-go)")


def sample() -> Profile:
    line = Frame.python("train.py", 42, "forward")
    op = Frame.op("aten::addmm")
    return build(
        [
            ([line, op], {"cpu_time_ns": 20.0, "count": 1}),
            ([line, op, Frame.kernel("gemm", "cuda:0", 7)], {"time_ns": 1000.0, "count": 2, "flops": 4e6}),
            ([line, op, Frame.kernel("gemm", "cuda:0", 9)], {"time_ns": 500.0, "count": 1, "flops": 2e6}),
            ([line, Frame.kernel("</script> & ;", "cuda:1", 7)], {"time_ns": 7.4}),
            ([Frame.python("deep.py", 1, "f" * 10_000)], {"cpu_time_ns": 3.0}),
        ]
    )


def raw(path: Path) -> tuple[list[str], list[tuple[list[int], list[int]]], str]:
    """``go tool pprof -raw``: the sample types, (values, location ids) per sample, and the whole text."""
    out = subprocess.run([GO or "go", "tool", "pprof", "-raw", str(path)], capture_output=True, text=True, check=True)
    lines = out.stdout.splitlines()
    at = lines.index("Samples:")
    types = [t.split("/")[0] for t in lines[at + 1].replace("[dflt]", "").split()]
    samples = []
    for text in lines[at + 2 : lines.index("Locations")]:
        m = re.match(r"^\s+([\d\s]+): ([\d ]+)\s*$", text)  # "v1 v2 ... vN: loc loc ..."; label lines skipped
        if m is not None:
            samples.append(([int(v) for v in m.group(1).split()], [int(v) for v in m.group(2).split()]))
    return types, samples, out.stdout


@needs_go
def test_go_tool_pprof_reads_every_metric_with_the_same_totals(tmp_path: Path) -> None:
    profile = sample()
    path = tmp_path / "p.pb.gz"
    find_exporter("pprof").write(profile, path)
    types, samples, text = raw(path)
    assert types == ["time", "cpu_time", "count", "flops"]
    metric = {"time": "time_ns", "cpu_time": "cpu_time_ns", "count": "count", "flops": "flops"}
    for i, t in enumerate(types):  # values are rounded per node: 7.4 ns of time is 7
        assert sum(values[i] for values, _ in samples) == sum(round(v) for v in profile.exclusive(metric[t]))
    assert len(samples) == 5
    # the two gemm kernels (streams 7 and 9) stay two samples with their labels; the hostile name is kept
    assert "stream:[7]" in text and "stream:[9]" in text and "device:[cuda:1]" in text
    assert "</script> & ;" in text
    top = subprocess.run(
        [GO or "go", "tool", "pprof", "-top", "-sample_index=flops", str(path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "6000000, 100% of 6000000 total" in top


@pytest.mark.skipif(PROTOC is None, reason="protoc is not installed (apt-get install protobuf-compiler)")
def test_protoc_decodes_the_message(tmp_path: Path) -> None:
    message = encode_message(sample())
    out = subprocess.run([PROTOC or "protoc", "--decode_raw"], input=message, capture_output=True, check=True).stdout
    text = out.decode()
    assert text.count("\n2 {") == 5  # five samples
    assert "string_table" not in text and '6: "time"' in text


def test_cli_writes_gzip_and_deep_stacks_encode(tmp_path: Path) -> None:
    frames = [Frame.python("deep.py", i + 1, f"f{i}") for i in range(5000)]
    deep = build([(frames, {"time_ns": 1.0})])
    prof = tmp_path / "d.ksprof"
    deep.save(str(prof))
    out = tmp_path / "d.pb.gz"
    assert main(["export", str(prof), "-f", "pprof", "-o", str(out)]) == 0
    assert gzip.decompress(out.read_bytes())  # a gzip stream
    if GO is not None:
        _, samples, _ = raw(out)
        assert len(samples) == 1 and len(samples[0][1]) == 5000
