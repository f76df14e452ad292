"""``import --store`` on real Dask clusters, the store's tables, ``kernelscope ranks`` and bad input.

The job is synthesised from a real rank trace by benchmarks/synth_job.py (8 ranks, a planted straggler
and a planted slow collective); the "running on a cluster" path runs on a ``distributed.LocalCluster``
started here and given to the CLI as ``--scheduler``.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from kernelscope.cli.main import main
from kernelscope.store.schema import SCHEMA_VERSION, TABLES

REPO = Path(__file__).resolve().parents[1]
TRACES = REPO.parent / "shared" / "traces"
BASE = TRACES / "tracelens_b200_vllm_tp8_rank0_compiled_nccl.json.gz"
HTA = [TRACES / f"hta_128rank_sampled_rank-{r}.json.gz" for r in (0, 1)]

pytestmark = pytest.mark.traces


def _synth() -> Any:
    spec = importlib.util.spec_from_file_location("synth_job", REPO / "benchmarks" / "synth_job.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="session")
def scheduler() -> Iterator[str]:
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        yield str(cluster.scheduler_address)


@pytest.fixture(scope="session")
def job(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    if not BASE.exists():
        pytest.skip("../shared/traces is absent")
    out = tmp_path_factory.mktemp("job") / "ranks"
    truth = _synth().synthesise(
        str(BASE),
        str(out),
        ranks=8,
        straggler=5,
        slowdown=1.5,
        slow_collective=30,
        late_rank=2,
        late_ms=5.0,
        jitter_us=20.0,
    )
    return out, truth


@pytest.fixture(scope="session")
def store(job: tuple[Path, dict[str, Any]], scheduler: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("store") / "job"
    assert main(["import", str(job[0]), "--store", str(root), "--scheduler", scheduler]) == 0
    return root


def test_store_on_a_running_cluster_has_every_rank_and_table(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = json.loads((store / "store.json").read_text())
    assert manifest["schema_version"] == SCHEMA_VERSION
    assert sorted(r["rank"] for r in manifest["ranks"]) == list(range(8))
    assert manifest["skipped"] == []
    for table, schema in TABLES.items():
        for rank in range(8):
            got = pq.read_schema(store / table / f"rank={rank}" / "part-0.parquet")
            assert got.remove_metadata() == schema, table
    assert (store / "merged.ksprof").is_file()


def test_planted_straggler_and_slow_collective_are_found_by_name_and_rank(
    store: Path, job: tuple[Path, dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    from kernelscope.analysis.diff.normalize import normal_kernel

    truth = job[1]
    capsys.readouterr()
    assert main(["ranks", str(store), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    s = report["straggler"]
    assert s["rank"] == truth["straggler"]["rank"]
    first_line = next(e for e in s["excess"] if e["by"] == "line")
    assert first_line["key"] == truth["straggler"]["line"]
    assert first_line["extra_ns"] > 0
    first_module = next(e for e in s["excess"] if e["by"] == "module")
    assert first_module["key"] in truth["straggler"]["modules"]
    slow = report["top_skew"][0]
    planted = truth["slow_collective"]
    assert (slow["seq"], slow["group"], slow["last_rank"]) == (planted["index"], planted["group"], planted["late_rank"])
    assert slow["name"] == normal_kernel(planted["kernel"])
    assert slow["skew_ns"] >= planted["late_ms"] * 1e6
    assert len(report["comm"]) == 8 and all(r["exposed_comm_ns"] <= r["total_comm_ns"] for r in report["comm"])
    assert report["heatmap"]["line"]["ranks"] == list(range(8))


def test_ranks_terminal_names_the_straggler(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["ranks", str(store)]) == 0
    out = capsys.readouterr().out
    assert "straggler: rank 5" in out and "flashinfer/fused_moe/core.py:1633" in out


def test_every_verb_reads_the_store(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["view", str(store), "--by", "module", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["rows"]
    assert main(["timeline", str(store), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)


def test_store_of_another_job_is_refused_and_left_alone(
    store: Path, scheduler: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = {p: p.stat().st_mtime_ns for p in store.rglob("*")}
    manifest = (store / "store.json").read_bytes()
    capsys.readouterr()
    assert main(["import", *map(str, HTA), "--store", str(store), "--scheduler", scheduler]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "another job" in err[0] and "nothing was overwritten" in err[0]
    assert (store / "store.json").read_bytes() == manifest
    assert {p: p.stat().st_mtime_ns for p in store.rglob("*")} == before
    assert not [p for p in store.parent.iterdir() if ".staging-" in p.name]


def _die_on_marked_file(index: int, path: str, staging: str) -> Any:
    from kernelscope.store.work import import_rank

    if path.endswith("dies.json.gz"):
        os._exit(1)  # the worker process dies: nothing comes back
    return import_rank(index, path, staging)


@pytest.mark.slow
def test_bad_rank_files_are_named_skipped_and_the_job_completes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A truncated file, one of another job and one whose worker dies, on the default local cluster."""
    import cloudpickle

    from kernelscope.store.job import import_job

    if not HTA[0].exists():
        pytest.skip("../shared/traces is absent")
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    for r, src in enumerate(HTA):
        shutil.copy(src, ranks / f"rank-{r}.json.gz")
    data = gzip.decompress(HTA[0].read_bytes())
    (ranks / "rank-2.json.gz").write_bytes(gzip.compress(data)[: len(gzip.compress(data)) // 2])  # truncated
    doc = json.loads(data)
    doc["distributedInfo"] = {**doc["distributedInfo"], "rank": 3, "world_size": 64}
    (ranks / "rank-3.json.gz").write_bytes(gzip.compress(json.dumps(doc).encode()))  # another job
    shutil.copy(HTA[1], ranks / "rank-4-dies.json.gz")
    # the CLI on the default local cluster: the truncated file and the other job's are named and skipped
    root = tmp_path / "store"
    assert main(["import", str(ranks / "rank-0.json.gz"), str(ranks / "rank-1.json.gz"), str(ranks / "rank-2.json.gz"),
                 str(ranks / "rank-3.json.gz"), "--store", str(root), "--workers", "1"]) == 0  # fmt: skip
    captured = capsys.readouterr()
    assert "rank-2.json.gz" in captured.err and "rank-3.json.gz: of another job" in captured.err
    assert "2 of 4 rank files imported, 2 skipped" in captured.out
    assert sorted(p.name for p in (root / "keyed").iterdir()) == ["rank=0", "rank=1"]
    # a worker that dies while importing one file: that file is named, the rest completes (the file that kills
    # it first: a task the worker held beside it dies with it and is run again, alone)
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    result = import_job([str(ranks / "rank-4-dies.json.gz"), str(ranks / "rank-0.json.gz")], str(tmp_path / "s2"),
                        workers=1, task=_die_on_marked_file)  # fmt: skip
    assert [r["rank"] for r in result.manifest.ranks] == [0]
    (skipped,) = result.manifest.skipped
    assert skipped.path.endswith("rank-4-dies.json.gz") and "worker importing it died" in skipped.reason


def test_kineto_import_keeps_what_collectives_recorded() -> None:
    from kernelscope.importers import import_file
    from kernelscope.store.tables import collectives_table

    if not BASE.exists():
        pytest.skip("../shared/traces is absent")
    profile = import_file(str(BASE))
    rows = profile.metadata["collectives"]["rows"]
    assert [r[1:] for r in rows] == [["_allgather_base", "3", -1]]
    table = collectives_table(profile).to_pylist()
    recorded = [r for r in table if r["name"] == "_allgather_base"]
    assert len(recorded) == 1 and recorded[0]["pg"] == "3" and recorded[0]["seq"] is None
    assert [r["order"] for r in table if r["pg"] == "stream 7"] == list(range(len(table) - 1))


def test_advisor_names_straggler_skew_and_imbalance(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["analyze", str(store), "--json"]) == 0
    found = {f["rule"]: f for f in reversed(json.loads(capsys.readouterr().out)["findings"])}
    assert found["straggler"]["device"] == "rank 5"
    assert (found["straggler"]["file"], found["straggler"]["line"]) == ("flashinfer/fused_moe/core.py", 1633)
    assert found["collective_skew"]["device"] == "rank 2" and "#30 in stream 7" in found["collective_skew"]["title"]
    assert "rank_imbalance" in found


def test_a_live_ranks_pauses_between_collectives_are_left_out_of_its_arrival() -> None:
    """``paused_ns`` of a collective: the gap time (kernelscope folding between windows) since the rank's
    previous collective ended, checked against a direct sum over random gaps and collectives."""
    import numpy as np

    from kernelscope.store.tables import _paused_before

    rng = np.random.default_rng(7)
    for _ in range(300):
        gaps = np.sort(rng.choice(10_000, size=2 * int(rng.integers(0, 8)), replace=False)).reshape(-1, 2)
        starts = np.sort(rng.integers(0, 10_000, size=int(rng.integers(1, 12))))
        ends = starts + rng.integers(0, 400, size=starts.size)
        expected, since = [], -(1 << 62)
        for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
            expected.append(sum(max(0, min(b, s) - max(a, since)) for a, b in gaps.tolist()))
            since = max(since, e)
        assert _paused_before(starts, ends, gaps).tolist() == expected
