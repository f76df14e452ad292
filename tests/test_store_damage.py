"""A damaged store is named, never believed: every file is held against the manifest before a query;
one line and exit 2, or with --allow-partial an answer that lists the ranks left out. Staging folders
left by a killed import are cleaned by the next import."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kernelscope.cli.main import main

pytest.importorskip("duckdb")
pytest.importorskip("distributed")

TRACES = Path(__file__).resolve().parents[1].parent / "shared" / "traces"
HTA = [TRACES / f"hta_128rank_sampled_rank-{r}.json.gz" for r in (0, 1)]

pytestmark = pytest.mark.traces


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-rank job store (two ranks of a real 128-rank trace), imported once."""
    if not all(p.exists() for p in HTA):
        pytest.skip("../shared/traces is absent")
    root = tmp_path_factory.mktemp("job") / "store"
    assert main(["import", *map(str, HTA), "--store", str(root), "--workers", "1"]) == 0
    return root


@pytest.fixture
def store(pristine: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "store"
    shutil.copytree(pristine, copy)
    return copy


def _manifest(store: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((store / "store.json").read_text())
    return data


def test_import_records_every_file_and_a_whole_store_checks_clean(pristine: Path, capsys: Any) -> None:
    files = _manifest(pristine)["files"]
    assert set(files) == {"merged.ksprof"} | {
        f"{t}/rank={r}/part-0.parquet" for t in ("keyed", "nodes", "timeline", "collectives", "devices") for r in (0, 1)
    }
    assert all(v["size"] > 0 for v in files.values())
    capsys.readouterr()
    assert main(["ranks", str(pristine), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ranks"] == [0, 1] and doc["left_out"] == []


def _truncate(p: Path) -> None:
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])


def _garbage(p: Path) -> None:
    p.write_bytes(os.urandom(p.stat().st_size))


def _empty_table(p: Path) -> None:
    import pyarrow.parquet as pq

    table = pq.read_table(p)
    pq.write_table(table.slice(0, 0), p)


DAMAGE: dict[str, tuple[str, Callable[[Path], None], str]] = {
    # name: (file under the store, what is done to it, words of the one line)
    "truncated keyed": ("keyed/rank=1/part-0.parquet", _truncate, "keyed/rank=1/part-0.parquet has"),
    "garbage keyed": ("keyed/rank=0/part-0.parquet", _garbage, "keyed/rank=0/part-0.parquet is not readable Parquet"),
    "empty devices": ("devices/rank=1/part-0.parquet", _empty_table, "devices/rank=1/part-0.parquet has"),
    "removed keyed rank": ("keyed/rank=1", shutil.rmtree, "keyed/rank=1/part-0.parquet is missing"),
    "removed nodes": ("nodes", shutil.rmtree, "nodes/rank=0/part-0.parquet is missing"),
    "a folder for a file": ("timeline/rank=1/part-0.parquet", lambda p: (p.unlink(), p.mkdir()), "not a regular file"),
}


@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_damaged_store_is_one_line_for_every_verb(store: Path, case: str, capsys: Any) -> None:
    rel, damage, words = DAMAGE[case]
    damage(store / rel)
    for argv in (["ranks", str(store)], ["ranks", str(store), "--json"], ["report", str(store), "-o", str(store.parent / "r.html")],
                 ["view", str(store)], ["analyze", str(store)]):  # fmt: skip
        capsys.readouterr()
        assert main(argv) == 2, argv
        out, err = capsys.readouterr()
        assert err.count("\n") == 1 and "damaged kernelscope store" in err and words in err, (argv, err)
        assert out == ""


@pytest.mark.parametrize("case", ["truncated keyed", "removed keyed rank", "empty devices"])
def test_allow_partial_answers_without_the_damaged_rank_and_says_so(store: Path, case: str, capsys: Any) -> None:
    rel, damage, _ = DAMAGE[case]
    damage(store / rel)
    capsys.readouterr()
    assert main(["ranks", str(store), "--json", "--allow-partial"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ranks"] == [0] and doc["left_out"] == [1]
    assert any(s.startswith("rank 1 left out: ") and rel.split("/")[0] in s for s in doc["skipped"])
    assert main(["ranks", str(store), "--allow-partial"]) == 0
    assert "partial: rank 1 left out (damaged files)" in capsys.readouterr().out
    assert main(["report", str(store), "-o", str(store.parent / "r.html"), "--allow-partial"]) == 0


def test_damaged_manifest_is_one_line(store: Path, capsys: Any) -> None:
    for change in ({"ranks": "x"}, {"ranks": [{"rank": 0}, {"rank": 0}]}, {"files": [1]}, {"job": 3}):
        data = {**_manifest(store), **change}
        (store / "store.json").write_text(json.dumps(data))
        capsys.readouterr()
        assert main(["ranks", str(store)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "damaged kernelscope store manifest" in err, err


def test_a_killed_imports_staging_folder_is_cleaned_by_the_next(tmp_path: Path, capsys: Any) -> None:
    if not all(p.exists() for p in HTA):
        pytest.skip("../shared/traces is absent")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    left = tmp_path / ".store.staging-abc123"
    (left / "r0").mkdir(parents=True)
    (left / "owner.pid").write_text(dead.stdout.strip())  # its owner has exited
    unowned = tmp_path / ".store.staging-killed-early"
    unowned.mkdir()  # killed before it recorded an owner
    alive = tmp_path / ".store.staging-running"
    alive.mkdir()
    (alive / "owner.pid").write_text(str(os.getppid()))  # a live process: an import still running
    other = tmp_path / ".other.staging-x"
    other.mkdir()  # another store's: not ours to judge
    assert main(["import", str(HTA[0]), "--store", str(tmp_path / "store"), "--workers", "1"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir() if ".staging-" in p.name) == [other.name, alive.name]
