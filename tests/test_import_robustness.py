"""Bad input gives one clear line (BadInputError, exit 2, no output file); fuzzed traces never crash."""

from __future__ import annotations

import copy
import gzip
import json
import os
import random
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernelscope.cli.main import main
from kernelscope.errors import BadInputError
from kernelscope.importers import import_file

TRACES = Path(__file__).parents[1].parent / "shared" / "traces"


def _events(n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(n):
        t = i * 100.0
        out.append({"ph": "X", "cat": "cpu_op", "name": f"aten::op{i % 7}", "pid": 1, "tid": 1, "ts": t, "dur": 50.0,
                    "args": {"External id": i}})  # fmt: skip
        out.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t + 1,
                    "dur": 5.0, "args": {"correlation": i}})  # fmt: skip
        out.append({"ph": "X", "cat": "kernel", "name": f"kernel_{i % 5}", "pid": 0, "tid": 7, "ts": t + 20,
                    "dur": 10.0, "args": {"device": 0, "stream": 7, "correlation": i}})  # fmt: skip
    return out


def _doc(n: int = 200) -> bytes:
    return json.dumps({"schemaVersion": 1, "traceEvents": _events(n)}, indent=1).encode()


BAD_INPUTS: dict[str, tuple[str, bytes, str]] = {
    # name: (file name, content, expected words in the message)
    "empty": ("t.json", b"", "empty file"),
    "whitespace": ("t.json", b"  \n ", "empty file"),
    "garbage": ("t.json", bytes(random.Random(1).randrange(256) for _ in range(5000)), "not"),
    "non-trace JSON": ("t.json", b'{"hello": [1, 2, 3]}', "not a format"),
    "traceEvents not a list": ("t.json", b'{"traceEvents": {"ph": "X"}}', "traceEvents is a dict"),
    "truncated JSON": ("t.json", _doc()[:-5000], "truncated or malformed JSON"),
    "truncated gzip": ("t.json.gz", gzip.compress(_doc(3000))[:40000], "truncated gzip"),
    # cut inside the first 64 KB: nothing decompresses; must not pass for an empty file
    "truncated gzip head": ("t.json.gz", gzip.compress(_doc(3000))[:12], "truncated gzip"),
    "corrupt gzip": ("t.json.gz", gzip.compress(_doc(3000))[:30000] + b"\x00" * 30000, "gzip"),
    "malformed JSON": ("t.json", _doc().replace(b'"dur"', b'"dur" #', 1), "malformed JSON"),
    "no usable events": ("t.json", b'{"traceEvents": [{"ph": "X", "cat": "mystery", "ts": 1, "dur": 1}]}', "no ops"),
    "non-object events": ("t.json", b'{"traceEvents": [1, "x", null]}', "no events"),
    "a directory": ("dir", b"", "directory"),
}


def _make(tmp_path: Path, name: str, content: bytes) -> str:
    path = tmp_path / name
    if name == "dir":
        path.mkdir()
    else:
        path.write_bytes(content)
    return str(path)


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_raises_one_line(tmp_path: Path, case: str) -> None:
    name, content, words = BAD_INPUTS[case]
    path = _make(tmp_path, name, content)
    with pytest.raises(BadInputError) as info:
        import_file(path)
    message = str(info.value)
    assert "\n" not in message
    assert words in message
    assert message.startswith(path)


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_cli_exits_2_with_one_line_and_no_output(tmp_path: Path, case: str, capsys: pytest.CaptureFixture[str]) -> None:
    name, content, _words = BAD_INPUTS[case]
    path = _make(tmp_path, name, content)
    out = tmp_path / "out.ksprof"
    assert main(["import", path, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("kernelscope: error: ")
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith((".ksprof", "out"))] == []


def test_cli_with_several_traces_writes_nothing_when_one_is_bad(tmp_path: Path) -> None:
    good = tmp_path / "rank0.json"
    good.write_bytes(_doc(20))
    bad = tmp_path / "rank1.json"
    bad.write_bytes(_doc(20)[:-100])
    out = tmp_path / "out.ksprof"
    assert main(["import", str(good), str(bad), "-o", str(out), "-j", "1"]) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rank0.json", "rank1.json"]


def test_cli_import_writes_a_profile_and_reports_warnings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    events = _events(5)
    events[0]["dur"] = -1.0
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"traceEvents": events}))
    out = tmp_path / "t.ksprof"
    assert main(["import", str(trace), "-o", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.err == f"kernelscope: warning: {trace}: 1 negative durations clamped to 0\n"
    assert captured.out.startswith(f"wrote {out}: ")
    assert out.exists()


# --- fuzzing ------------------------------------------------------------------
def _seed_traces() -> list[bytes]:
    seeds = [_doc(30)]
    small = TRACES / "hta_a100_triton_example.json.gz"
    if small.exists():
        seeds.append(gzip.decompress(small.read_bytes()))
    other = TRACES / "hta_a100_alexnet_cuda_sync.json.gz"
    if other.exists():
        doc = json.loads(gzip.decompress(other.read_bytes()))
        doc["traceEvents"] = doc["traceEvents"][:300]
        seeds.append(json.dumps(doc).encode())
    return seeds


SEEDS = _seed_traces()
ODD_VALUES: list[Any] = [None, "x", "", -1, 0, 2**70, -(2**70), 1e308, -1e308, 1.5, True, [], [1, [2]], {}, {"a": 1}]
KEYS = ["ph", "cat", "name", "pid", "tid", "ts", "dur", "args", "id"]
ARG_KEYS = ["External id", "correlation", "stream", "device", "Sequence number", "Fwd thread id", "Input Dims", "Bytes"]


def _import_or_bad_input(data: bytes, suffix: str = ".json") -> None:
    fd, path = tempfile.mkstemp(suffix=suffix)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        try:
            profile = import_file(path)
        except BadInputError as exc:
            assert "\n" not in str(exc)
        else:
            profile.check()
    finally:
        os.unlink(path)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.sampled_from(range(len(SEEDS))), flips=st.lists(st.tuples(st.floats(0, 1), st.integers(0, 255)), max_size=8)
)
def test_fuzz_byte_flips(seed: int, flips: list[tuple[float, int]]) -> None:
    data = bytearray(SEEDS[seed])
    for where, value in flips:
        data[int(where * (len(data) - 1))] = value
    _import_or_bad_input(bytes(data))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.sampled_from(range(len(SEEDS))), cut=st.floats(0, 1), gz=st.booleans())
def test_fuzz_truncation(seed: int, cut: float, gz: bool) -> None:
    data = gzip.compress(SEEDS[seed]) if gz else SEEDS[seed]
    _import_or_bad_input(data[: int(cut * len(data))], ".json.gz" if gz else ".json")


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.sampled_from(range(len(SEEDS))),
    swaps=st.lists(
        st.tuples(st.floats(0, 1), st.sampled_from(KEYS + ARG_KEYS), st.sampled_from(range(len(ODD_VALUES)))),
        min_size=1,
        max_size=10,
    ),
)
def test_fuzz_field_types(seed: int, swaps: list[tuple[float, str, int]]) -> None:
    doc = json.loads(SEEDS[seed])
    events = doc["traceEvents"]
    for where, key, value in swaps:
        ev = events[int(where * (len(events) - 1))]
        if not isinstance(ev, dict):
            continue
        if key in ARG_KEYS:
            if isinstance(ev.get("args"), dict):
                ev["args"][key] = copy.deepcopy(ODD_VALUES[value])
        else:
            ev[key] = copy.deepcopy(ODD_VALUES[value])
    _import_or_bad_input(json.dumps(doc).encode())
