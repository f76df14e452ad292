"""A seeded fuzz of what kernelscope reads from others: traces, profiles and job stores, mutated.

Every mutant goes through the CLI (view, analyze, timeline, report; ranks for stores) in one child
process under an address-space limit and a timeout. Each call must return 0 or 2 (bad input: one line,
never a traceback), finish within a per-call bound, and the process must stay under a memory bound.
The seed is fixed (``KS_FUZZ_SEED`` changes it), so a failure names a case that can be rerun.
"""

from __future__ import annotations

import copy
import gzip
import io
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import env_without_color
from kernelscope.cli.main import main

SEED = int(os.environ.get("KS_FUZZ_SEED", "25"))
CALL_SECONDS = 20.0  # per call, on 2 shared cores: a hang, not a slow call
TOTAL_SECONDS = 400
MEMORY_LIMIT = 3 << 30  # address space of the child (the interpreter, numpy, duckdb and the cases)
PEAK_RSS_MB = 1024
DRIVER = Path(__file__).parent / "fuzz_driver.py"
TRACES = Path(__file__).resolve().parents[1].parent / "shared" / "traces"
HTA = [TRACES / f"hta_128rank_sampled_rank-{r}.json.gz" for r in (0, 1)]

HOSTILE: list[Any] = [
    None, True, -1, 0, 2**31, 2**63 - 1, -(2**63), 1e308, -0.5, "", "\x1b[2J\x1b]0;PWNED\x07", "x" * 5000,
    "../../../../etc/passwd", "/proc/self/environ", [], {}, [1, 2], {"a": 1}, [[[[[]]]]], "0", "NaN",
]  # fmt: skip


# --- a base trace: python frames, ops, launches, kernels, memory, a header -------------------------
def base_trace() -> dict[str, Any]:
    ev: list[dict[str, Any]] = []
    for i in range(30):
        t = i * 100.0
        ev += [
            {"ph": "X", "cat": "python_function", "name": f"train.py({10 + i % 3}): step", "pid": 1, "tid": 1,
             "ts": t, "dur": 90, "args": {"Python id": i}},
            {"ph": "X", "cat": "cpu_op", "name": f"aten::op{i % 4}", "pid": 1, "tid": 1, "ts": t + 2, "dur": 60,
             "args": {"External id": i, "Input Dims": [[4, 4], [4]], "Sequence number": i}},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t + 5,
             "dur": 5, "args": {"correlation": i, "External id": i}},
            {"ph": "X", "cat": "kernel", "name": f"gemm_{i % 3}", "pid": 0, "tid": 7, "ts": t + 20, "dur": 30,
             "args": {"device": 0, "stream": 7, "correlation": i, "External id": i, "grid": [1, 1, 1]}},
            {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": t + 3,
             "args": {"Bytes": 256, "Total Allocated": 1024, "Device Id": 0}},
            {"ph": "f", "id": i, "pid": 0, "tid": 7, "ts": t + 20, "cat": "ac2g", "name": "ac2g", "bp": "e"},
        ]  # fmt: skip
    return {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": "NVIDIA H100", "computeMajor": 9, "numSms": 132}],
        "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1},
        "traceEvents": ev,
    }


# --- the mutator ---------------------------------------------------------------------------------
def _paths(value: Any, here: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [here]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*here, k))
    elif isinstance(value, list):
        for i, v in enumerate(value[:50]):
            out += _paths(v, (*here, i))
    return out


def mutate_json(doc: Any, rng: random.Random, edits: int = 3) -> Any:
    """A copy of ``doc`` with a few values replaced by hostile ones, keys dropped or lists emptied."""
    if rng.random() < 0.08:
        return rng.choice(HOSTILE)  # the whole document of the wrong shape (metadata.json = [1, 2])
    doc = copy.deepcopy(doc)
    for _ in range(edits):
        paths = [p for p in _paths(doc) if p]
        if not paths:
            return rng.choice(HOSTILE)
        path = rng.choice(paths)
        parent = doc
        for step in path[:-1]:
            parent = parent[step]
        what = rng.random()
        if what < 0.15 and isinstance(parent, dict):
            del parent[path[-1]]
        elif what < 0.25 and isinstance(parent[path[-1]], list):
            parent[path[-1]] = parent[path[-1]] * rng.choice([0, 3])
        else:
            parent[path[-1]] = rng.choice(HOSTILE)
    return doc


def flip(data: bytes, rng: random.Random, n: int) -> bytes:
    buf = bytearray(data)
    for _ in range(n):
        buf[rng.randrange(len(buf))] = rng.randrange(256)
    return bytes(buf)


def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    what = rng.random()
    if what < 0.4:
        return flip(data, rng, rng.choice([1, 4, 64]))
    if what < 0.7:
        return data[: rng.randrange(len(data))]
    if what < 0.85:
        cut = rng.randrange(len(data))
        return data[:cut] + data[cut : cut + rng.randrange(1, 4096)] * rng.choice([2, 50]) + data[cut:]
    return data + os.urandom(rng.randrange(1, 2000))


def mutate_trace(doc: dict[str, Any], rng: random.Random) -> tuple[str, bytes]:
    gz = rng.random() < 0.4
    text = json.dumps(mutate_json(doc, rng, rng.choice([1, 3, 10]))).encode()
    if rng.random() < 0.3:
        text = mutate_bytes(text, rng)
    data = gzip.compress(text) if gz else text
    if gz and rng.random() < 0.3:
        data = mutate_bytes(data, rng)
    return ("t.json.gz" if gz else "t.json"), data


def _hostile_array(rng: random.Random, n: int) -> np.ndarray[Any, Any]:
    dtype = rng.choice([np.int32, np.int64, np.float64, np.uint8, np.int8, np.bool_])
    length = rng.choice([0, 1, n - 1, n, n + 1, 3 * n])
    values = rng.choice([0, -1, n, 10**6, 2**31 - 1, -(2**31)])
    a = np.full(max(length, 0), values if dtype is not np.bool_ else True).astype(dtype, copy=False)
    if rng.random() < 0.3:
        a = a.reshape(-1, 1) if a.size else a
    return a


def mutate_profile(ksprof: bytes, rng: random.Random) -> bytes:
    with zipfile.ZipFile(io.BytesIO(ksprof)) as zf:
        members = {i.filename: zf.read(i.filename) for i in zf.infolist()}
    n = int(np.load(io.BytesIO(members["nodes/parent.npy"])).shape[0])
    what = rng.random()
    name = rng.choice(sorted(members))
    if what < 0.5 and name.endswith(".json"):
        members[name] = json.dumps(mutate_json(json.loads(members[name]), rng, rng.choice([1, 3]))).encode()
    elif what < 0.75 and name.endswith(".npy"):
        buf = io.BytesIO()
        np.save(buf, _hostile_array(rng, n))
        members[name] = buf.getvalue()
    elif what < 0.85:
        del members[name]
    else:
        members[name] = mutate_bytes(members[name], rng)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for k, v in members.items():
            zf.writestr(k, v)
    data = out.getvalue()
    return mutate_bytes(data, rng) if rng.random() < 0.15 else data


def mutate_store(pristine: Path, dest: Path, rng: random.Random) -> None:
    shutil.copytree(pristine, dest)
    files = sorted(p for p in dest.rglob("*") if p.is_file())
    for _ in range(rng.choice([1, 2])):
        target = rng.choice(files)
        if not target.exists():
            continue
        if target.name == "store.json":
            target.write_text(json.dumps(mutate_json(json.loads(target.read_text()), rng, rng.choice([1, 3]))))
        elif rng.random() < 0.2:
            target.unlink()
        else:
            target.write_bytes(mutate_bytes(target.read_bytes(), rng))


# --- the corpus and the run ------------------------------------------------------------------------
def _verbs(path: Path, out: Path, i: int) -> list[list[str]]:
    calls = [["view", str(path)], ["view", str(path), "--by", "line", "--json"], ["analyze", str(path), "--json"],
             ["timeline", str(path)]]  # fmt: skip
    if i % 4 == 0:
        calls.append(["report", str(path), "-o", str(out / f"r{i}.html")])
    return calls


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[list[str]]]:
    rng = random.Random(SEED)
    root = tmp_path_factory.mktemp("fuzz")
    calls: list[list[str]] = []
    doc = base_trace()
    good = root / "good.json"
    good.write_text(json.dumps(doc))
    ksprof = root / "good.ksprof"
    assert main(["import", str(good), "-o", str(ksprof)]) == 0
    for i in range(36):
        name, data = mutate_trace(doc, rng)
        path = root / f"trace{i}-{name}"
        path.write_bytes(data)
        calls += _verbs(path, root, i)
    base = ksprof.read_bytes()
    for i in range(48):
        path = root / f"profile{i}.ksprof"
        path.write_bytes(mutate_profile(base, rng))
        calls += _verbs(path, root, i)
    if all(p.exists() for p in HTA) and _has_store_extra():
        pristine = root / "pristine"
        assert main(["import", *map(str, HTA), "--store", str(pristine), "--workers", "1"]) == 0
        for i in range(16):
            dest = root / f"store{i}"
            mutate_store(pristine, dest, rng)
            calls += [["ranks", str(dest), "--json"], ["ranks", str(dest), "--allow-partial"], ["view", str(dest)]]
    return root, calls


def _has_store_extra() -> bool:
    try:
        import distributed  # noqa: F401
        import duckdb  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.slow
def test_mutated_inputs_never_crash_hang_or_blow_up(corpus: tuple[Path, list[list[str]]]) -> None:
    root, calls = corpus
    cases = root / "cases.json"
    cases.write_text(json.dumps(calls))

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))

    try:
        run = subprocess.run(
            [sys.executable, str(DRIVER), str(cases)],
            capture_output=True, text=True, timeout=TOTAL_SECONDS, cwd=root, env=env_without_color(),
            preexec_fn=limit,
        )  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        started = [ln for ln in (exc.stderr or b"").decode(errors="replace").splitlines() if ln.startswith("{")]
        pytest.fail(f"the fuzz run hung (seed {SEED}); last call started: {started[-1] if started else '?'}")
    lines = [json.loads(ln) for ln in run.stdout.splitlines() if ln.startswith("{")]
    results, peak = lines[:-1], lines[-1]
    assert run.returncode == 0 and len(results) == len(calls), run.stderr[-3000:]
    bad = [r for r in results if r["rc"] not in (0, 2) or r["raised"] or r["traceback"]]
    assert not bad, f"seed {SEED}: {len(bad)} calls crashed, first: {bad[0]}"
    multi = [r for r in results if r["rc"] == 2 and r["stderr_lines"] != 1]
    assert not multi, f"seed {SEED}: bad input must be one line: {multi[0]}"
    slow = [r for r in results if r["seconds"] > CALL_SECONDS]
    assert not slow, f"seed {SEED}: a call took {slow[0]['seconds']} s: {slow[0]['argv']}"
    assert peak["peak_rss_mb"] < PEAK_RSS_MB, peak
    refused = sum(r["rc"] == 2 for r in results)
    assert 0 < refused < len(results)  # the mutator produced both readable and damaged inputs
