"""A live run and the import of the same program's own chrome trace give the same tree (issue 7).

What a chrome trace cannot carry is normalised away on both sides: python frames compare by
file and function (a trace names a function by its def line, a live run by the calling line),
modules by class (a trace has ``Linear_0``, not the attribute path). Everything else must match:
the functions, the ops under them with their call counts, backward placement, the metric columns.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from kernelscope import load
from kernelscope.analysis.diff import diff
from kernelscope.importers import import_file
from kernelscope.model import FrameKind, Profile

pytest.importorskip("torch")
pytestmark = pytest.mark.slow

from test_torch_live import FIXTURES, ks  # noqa: E402

SCRIPT = FIXTURES / "live_vs_trace.py"
COMPARABLE = (FrameKind.OP, FrameKind.BACKWARD, FrameKind.REGION, FrameKind.SCOPE)


def normalised(profile: Profile) -> dict[str, float]:
    """Op paths at function level -> calls.

    Compiled code: a live run places each kernel of a compiled graph under the lines and modules it
    fused (torch.compile provenance), which a trace cannot know; there a kernel sits under its graph.
    Both compare as ``{compiled fwd|bwd}`` under the region's calling function, with the ops inside.
    """
    counts = profile.exclusive("count")
    out: dict[str, float] = defaultdict(float)
    for node in range(1, len(profile)):
        if profile.frame_of(node).kind not in (FrameKind.OP, FrameKind.KERNEL):
            continue
        path = profile.path(node)
        region = next((i for i, f in enumerate(path) if f.kind is FrameKind.REGION), None)
        compiled: list[str] = []
        if region is not None:
            inside = path[region:]
            way = "bwd" if any(f.kind is FrameKind.BACKWARD for f in inside) else "fwd"
            ops = [f.name for f in inside if f.kind in (FrameKind.OP, FrameKind.KERNEL)]
            wrapper = [o for o in ops[:-1] if o != "CompiledFunctionBackward"]  # the backward graph's own wrapper
            compiled = [f"{{compiled {way}}}", *wrapper, ops[-1]]
            path = path[:region]
        key: list[str] = []
        for frame in path:
            if frame.kind is FrameKind.PYTHON:
                label = f"{os.path.basename(frame.file)}:{frame.name}"
                if not key or key[-1] != label:
                    key.append(label)
            elif frame.kind is FrameKind.MODULE:
                key.append(f"({frame.cls})")
            elif frame.kind in COMPARABLE:
                key.append(frame.label())
        out[" > ".join(key + compiled)] += counts[node]
    return dict(out)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_live_run_and_its_own_trace_give_the_same_tree(tmp_path: Path, compiled: bool) -> None:
    flag = ["--compile"] if compiled else []
    r = ks(
        "run",
        "--skip-first",
        "1",
        "--max-overhead",
        "0",
        "--no-view",
        "-o",
        "live.ksprof",
        str(SCRIPT),
        *flag,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    live = load(str(tmp_path / "live.ksprof"))
    subprocess.run(
        [sys.executable, str(SCRIPT), *flag, str(tmp_path / "trace.json")],
        cwd=tmp_path,
        check=True,
        capture_output=True,
    )
    traced = import_file(str(tmp_path / "trace.json"))

    a, b = normalised(live), normalised(traced)
    only_live = {k: v for k, v in a.items() if b.get(k) != v}
    only_trace = {k: v for k, v in b.items() if a.get(k) != v}
    assert only_live == only_trace == {}
    if compiled:  # the compiled graph's forward and backward, under the function that called it
        assert any("train > {compiled fwd}" in k for k in a) and any("train > {compiled bwd}" in k for k in a)
        # one name for the region in both, so diff matches it (the live run's torch.compile line is its location)
        for base, new in ((live, traced), (traced, live)):
            rows = [r for r in diff(base, new, by="tree").rows if (r.key or "").endswith("<torch.compile(loss_fn)>")]
            assert len(rows) == 1 and rows[0].base > 0 and rows[0].new > 0, rows
    else:  # backward work sits under the forward functions in both
        assert any("[backward] > AddmmBackward0" in k and "(Linear)" in k for k in a)
    # the same metric columns, the same FLOPs (one cost table)
    shared = {"time_ns", "cpu_time_ns", "count", "flops", "bytes"}
    assert shared <= set(live.metric_names) and shared <= set(traced.metric_names)
    assert live.total("flops") == traced.total("flops") > 0
    assert live.total("bytes") == traced.total("bytes") > 0
