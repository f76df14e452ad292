"""The MCP tools as plain functions (no server): bounds on hostile profiles, keys, the open-file cache."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from conftest import build
from kernelscope.mcp import opened
from kernelscope.mcp.failure import ToolFailure
from kernelscope.mcp.tools import profiles as tools
from kernelscope.model import Frame

DEPTH = 5_000
LONG = "k" * 10_000 + "</script>&"


def size(doc: dict[str, object]) -> int:
    return len(json.dumps(doc, separators=(",", ":")).encode())


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    """A 5,000-deep stack of Python frames ending in a kernel with a 10,000-character name, beside a
    shallow line; the source file exists for the shallow line only."""
    src = tmp_path / "train.py"
    src.write_text("".join(f"x{i} = {i}\n" for i in range(1, 21)))
    deep = [Frame.python("deep.py", i + 1, f"f{i}") for i in range(DEPTH)]
    p = build(
        [
            ([*deep, Frame.op("aten::mm"), Frame.kernel(LONG)], {"time_ns": 3e6, "count": 1}),
            ([Frame.python("train.py", 10, "main"), Frame.op("aten::add")], {"time_ns": 1e6, "count": 2}),
        ]
    )
    out = tmp_path / "hostile.ksprof"
    p.save(out)
    return out


def test_deep_trees_and_long_names_stay_bounded(hostile: Path) -> None:
    path = str(hostile)
    tree = tools.tree(path, depth=50, limit=500, min_pct=0.0, max_bytes=20_000)
    # root, 50 levels of the deep stack, the shallow line and its op; the cut is shown as children not shown
    assert size(tree) <= 20_000 and not tree["truncated"] and tree["total_rows"] == tree["returned"] == 53
    assert max(r["depth"] for r in tree["rows"]) == 50
    assert [(r["children"], r["children_shown"]) for r in tree["rows"] if r["depth"] == 50] == [(1, 0)]
    cut = tools.tree(path, depth=50, limit=10, min_pct=0.0)
    assert cut["truncated"] and cut["returned"] == 10 and cut["total_rows"] == 53
    assert all(len(r["label"]) <= 200 for r in tree["rows"])
    last = tree["rows"][-1]["node"] if tree["rows"][-1]["kind"] == "python" else tree["rows"][-2]["node"]
    deeper = tools.tree(path, node=last, depth=50)
    assert deeper["rows"][0]["node"] == last and deeper["rows"][0]["depth"] == 0
    top = tools.top(path, by="kernel", limit=5, max_bytes=20_000)
    assert top["rows"][0]["key"] == LONG  # keys are whole: the next call can use them
    assert tools.tree(path, node=top["rows"][0]["nodes"][0], depth=0)["rows"][0]["kind"] == "kernel"
    small = tools.top(path, by="kernel", limit=5, max_bytes=2_000)
    assert small["rows"] == [] and small["truncated"] and size(small) <= 2_000


def test_source_reads_the_file_when_it_is_here_and_says_why_not(hostile: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(hostile.parent)  # the profile's keys are relative to where it ran
    here = tools.source(str(hostile), key="train.py:10", context=2)
    assert here["source_available"] and [r["line"] for r in here["lines"]] == [8, 9, 10, 11, 12]
    assert [r["text"] for r in here["lines"] if r["here"]] == ["x10 = 10"]
    kernel_node = tools.top(str(hostile), by="kernel")["rows"][0]["nodes"][0]
    gone = tools.source(str(hostile), node=kernel_node)
    assert (
        gone["key"] == f"deep.py:{DEPTH}"
        and not gone["source_available"]
        and "not a readable text file" in gone["reason"]
    )
    with pytest.raises(ToolFailure) as exc:
        tools.source(str(hostile), key="train.py:12")
    assert exc.value.code == "no_such_key" and exc.value.details["close"] == ["train.py:10"]
    with pytest.raises(ToolFailure) as exc:
        tools.source(str(hostile))
    assert exc.value.code == "bad_option"


def test_a_rewritten_file_is_read_again(hostile: Path) -> None:
    first = tools.summary(str(hostile))
    build([([Frame.op("aten::relu")], {"time_ns": 5.0})]).save(hostile)
    os.utime(hostile, ns=(1, 1))  # a different modification time, whatever the clock's resolution
    second = tools.summary(str(hostile))
    assert first["contexts"] > DEPTH and second["contexts"] == 2
    assert len(opened._cache) <= opened.KEEP


def test_history_tool_reads_a_history_database(tmp_path: Path) -> None:
    pytest.importorskip("duckdb")
    from kernelscope.cli.main import main as cli
    from kernelscope.mcp.failure import ToolFailure
    from kernelscope.mcp.tools.jobs import history

    profile = str(Path(__file__).parent / "data" / "tiny_transformer_cpu.ksprof")
    db = str(tmp_path / "h.duckdb")
    for variant in ("a", "b"):
        assert cli(["history", "add", profile, "--db", db, "--label", f"v={variant}"]) == 0
    doc = history(db, by="module", limit=3)
    assert [r["labels"] for r in doc["runs"]] == [{"v": "a"}, {"v": "b"}]
    assert 0 < len(doc["keys"]) <= 3 and all(k["change_pct"] == 0 for k in doc["keys"])  # the same profile twice
    with pytest.raises(ToolFailure):
        history(str(tmp_path / "none.duckdb"))
