"""Several ranks: rank detection, merge under ``[rank R]``, parallel import, the CLI's files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kernelscope.cli.main import main
from kernelscope.importers import import_file
from kernelscope.importers.multirank import import_ranks, merge_ranks, ranks_of
from kernelscope.model import Frame, Profile, ProfileBuilder, TimelineBuilder, load
from kernelscope.model.timeline import Category

TRACES = Path(__file__).parents[1].parent / "shared" / "traces"


def small_profile(rank: int | None, kernel_ns: float) -> Profile:
    b = ProfileBuilder()
    op = b.path([Frame.op("aten::mm")])
    k = b.child(op, Frame.kernel("gemm", "cuda:0", 7))
    b.add(k, "time_ns", kernel_ns)
    b.add(k, "count", 1)
    tb = TimelineBuilder()
    tb.add(k, tb.track("stream 7", "cuda:0"), 100, int(kernel_ns), Category.KERNEL, 1, 5)
    meta: dict[str, Any] = {"source": {"format": "kineto"}}
    if rank is not None:
        meta.update(rank=rank, world_size=2)
    return b.build(meta, tb.build())


def test_merge_puts_each_rank_under_its_scope() -> None:
    # given two ranks' profiles
    merged = merge_ranks([small_profile(0, 10.0), small_profile(1, 30.0)], [0, 1])
    # then each tree sits under [rank R], metrics follow, the timeline devices carry the rank
    merged.check()
    paths = {
        tuple(f.label() for f in merged.path(n)): float(merged.exclusive("time_ns")[n]) for n in range(1, len(merged))
    }
    assert paths == {
        ("[rank 0]",): 0.0,
        ("[rank 0]", "aten::mm"): 0.0,
        ("[rank 0]", "aten::mm", "gemm"): 10.0,
        ("[rank 1]",): 0.0,
        ("[rank 1]", "aten::mm"): 0.0,
        ("[rank 1]", "aten::mm", "gemm"): 30.0,
    }
    tl = merged.timeline
    assert tl is not None
    assert [t.device for t in tl.tracks] == ["rank 0/cuda:0", "rank 1/cuda:0"]
    assert [merged.path(int(n))[0].name for n in tl.node] == ["rank 0", "rank 1"]
    assert [r["rank"] for r in merged.metadata["ranks"]] == [0, 1]
    assert merged.metadata["world_size"] == 2
    assert "python_lines" not in merged.metadata
    # every rank's Python frames name functions (torch.profiler traces): so do the job's
    named = [
        p.replace(metadata={**p.metadata, "python_lines": "def"})
        for p in (small_profile(0, 1.0), small_profile(1, 1.0))
    ]
    assert merge_ranks(named, [0, 1]).metadata["python_lines"] == "def"


def test_rank_detection_order() -> None:
    with_meta = [small_profile(5, 1), small_profile(4, 1)]
    assert ranks_of(["a.json", "b.json"], with_meta) == [5, 4]
    bare = [small_profile(None, 1), small_profile(None, 1)]
    assert ranks_of(["job_rank-3.json.gz", "job_rank_2.json"], bare) == [3, 2]
    assert ranks_of(["x.json", "y.json"], bare) == [0, 1]
    assert ranks_of(["rank1.json", "rank1.json"], bare) == [0, 1]  # duplicates: file order


@pytest.mark.traces
def test_hta_pair_imports_in_parallel_and_merges() -> None:
    paths = [str(TRACES / f"hta_128rank_sampled_rank-{r}.json.gz") for r in (0, 1)]
    if not all(Path(p).exists() for p in paths):
        pytest.skip("traces not available")
    # when imported in two processes
    profiles = import_ranks(paths, workers=2)
    # then each matches a serial import and the merge holds both ranks
    for path, prof in zip(paths, profiles, strict=True):
        serial = import_file(path)
        assert np.array_equal(serial.exclusive("time_ns"), prof.exclusive("time_ns"))
    assert ranks_of(paths, profiles) == [0, 1]
    merged = merge_ranks(profiles, [0, 1])
    merged.check()
    tops = sorted(merged.frame_of(n).name for n in merged.children[0])
    assert tops == ["rank 0", "rank 1"]
    assert merged.total("time_ns") == pytest.approx(sum(p.total("time_ns") for p in profiles))
    assert merged.timeline is not None
    assert {d.split("/")[0] for d in merged.timeline.devices()} == {"rank 0", "rank 1"}


def test_cli_writes_per_rank_and_merged_profiles(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = []
    for rank in (0, 1):
        events = [
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 10},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1, "dur": 2,
             "args": {"correlation": 1}},
            {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 5, "dur": 3 + rank,
             "args": {"correlation": 1, "device": 0, "stream": 7}},
        ]  # fmt: skip
        path = tmp_path / f"trace_rank{rank}.json"
        path.write_text(json.dumps({"distributedInfo": {"rank": rank, "world_size": 2}, "traceEvents": events}))
        files.append(str(path))
    out = tmp_path / "job.ksprof"
    assert main(["import", *files, "-o", str(out)]) == 0
    assert sorted(p.name for p in tmp_path.glob("*.ksprof")) == ["job.ksprof", "job.rank0.ksprof", "job.rank1.ksprof"]
    merged = load(out)
    assert merged.total("time_ns") == 3000 + 4000
    assert load(tmp_path / "job.rank1.ksprof").total("time_ns") == 4000
    assert capsys.readouterr().out.count("wrote ") == 3


def test_views_sum_a_jobs_ranks_unless_asked_per_rank(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # given a job of three ranks whose trees are the same code
    merged = merge_ranks([small_profile(r, ns) for r, ns in enumerate((10.0, 30.0, 20.0))], [0, 1, 2])
    path = tmp_path / "job.ksprof"
    from kernelscope.model import save

    save(merged, str(path))
    # when viewed: the code once, summed over the ranks (calls too)
    assert main(["view", str(path), "--json"]) == 0
    root = json.loads(capsys.readouterr().out)["root"]
    [ranks] = root["children"]
    assert ranks["name"] == "ranks 0..2"
    [mm] = ranks["children"]
    [gemm] = mm["children"]
    assert gemm["metrics"]["time_ns"] == 60.0 and gemm["metrics"]["count"] == 3.0
    # and --per-rank keeps each rank apart, named even where the text view collapses single-child chains
    assert main(["view", str(path), "--per-rank"]) == 0
    text = capsys.readouterr().out
    assert all(f"[rank {r}]" in text for r in range(3))
