"""``kernelscope mcp`` through the MCP SDK's own client, over stdio, against a spawned server."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest

pytest.importorskip("mcp")

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from conftest import SHARED_TRACES
from kernelscope.mcp.bounds import bounded, capped
from slow_line_run import REPO, env, planted_line, run_slow_line

TOOLS = {"summary", "top", "tree", "source", "findings", "timeline", "diff", "ranks", "history"}
LARGEST = "tracelens_mi300_xdit_sd35_torch_compile_triton.json.gz"
T = TypeVar("T")


class Session:
    """One connected client that counts its tool calls and decodes each answer."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.calls = 0

    async def call(self, name: str, **args: Any) -> tuple[dict[str, Any], bool, int]:
        """(the answer, whether it is an error, its size in bytes)."""
        self.calls += 1
        result = await self.client.call_tool(name, args)
        (content,) = result.content
        text = content.text  # type: ignore[union-attr]
        doc = json.loads(text)
        assert result.structured_content == doc
        return doc, bool(result.is_error), len(text.encode())

    async def ok(self, name: str, **args: Any) -> dict[str, Any]:
        doc, is_error, _ = await self.call(name, **args)
        assert not is_error, doc
        return doc

    async def error(self, name: str, **args: Any) -> dict[str, Any]:
        doc, is_error, _ = await self.call(name, **args)
        assert is_error, doc
        assert set(doc) == {"error"} and doc["error"]["code"] != "internal", doc
        assert "Traceback" not in doc["error"]["message"]
        return dict(doc["error"])


def with_server(script: Callable[[Session], Awaitable[T]]) -> T:
    params = StdioServerParameters(command=sys.executable, args=["-m", "kernelscope", "mcp"], env=env(), cwd=str(REPO))

    async def main() -> T:
        async with Client(params) as client:
            return await script(Session(client))

    return anyio.run(main)


@pytest.fixture(scope="module")
def slow_profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = run_slow_line(tmp_path_factory.getbasetemp())
    assert run.returncode == 0, run.stderr
    return run.profile


@pytest.mark.slow
def test_a_scripted_session_finds_the_planted_line_in_two_calls(slow_profile: Path) -> None:
    async def script(s: Session) -> None:
        listed = await s.client.list_tools()
        assert {t.name for t in listed.tools} == TOOLS
        assert all(t.annotations is not None and t.annotations.read_only_hint for t in listed.tools)
        # given the profile of examples/slow_line.py, when an agent asks for the summary
        summary = await s.ok("summary", path=str(slow_profile))
        heaviest = summary["heaviest"]["line"][0]
        # then the heaviest line's key leads to the source of the planted line
        source = await s.ok("source", path=str(slow_profile), key=heaviest["key"], context=2)
        assert source["line"] == planted_line()
        assert source["file"].endswith("slow_line.py") and source["source_available"]
        (here,) = [row for row in source["lines"] if row["here"]]
        assert "# SLOW" in here["text"] and here["value"] == heaviest["value"]
        assert source["pct"] > 50
        assert s.calls <= 4
        # and the row's tree nodes open the subtree under that line
        tree = await s.ok("tree", path=str(slow_profile), node=heaviest["nodes"][0], depth=2)
        assert tree["rows"][0]["line"] == planted_line()
        assert {r["kind"] for r in tree["rows"][1:]} <= {"op", "kernel", "python", "part"}

    with_server(script)


@pytest.mark.slow
def test_errors_are_structured_codes_never_tracebacks(slow_profile: Path, tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("not a trace\n")
    p = str(slow_profile)

    async def script(s: Session) -> None:
        assert (await s.error("summary", path=str(tmp_path / "missing.ksprof")))["code"] == "no_such_file"
        assert (await s.error("top", path=str(text)))["code"] == "trace_format_unknown"
        assert (await s.error("top", path=p, by="file"))["choices"] == [
            "line",
            "function",
            "module",
            "op",
            "kernel",
            "layer",
            "line-layer",
        ]
        assert (await s.error("top", path=p, limit=0))["code"] == "bad_option"
        assert (await s.error("top", path=p, include="("))["code"] == "bad_option"
        assert (await s.error("top", path=p, metric="joules"))["code"] == "no_such_metric"
        missing = await s.error("source", path=p, key=f"examples/slow_line.py:{planted_line() - 2}")
        assert missing["code"] == "no_such_key" and f"examples/slow_line.py:{planted_line()}" in missing["close"]
        assert (await s.error("tree", path=p, node=10**6))["code"] == "no_such_node"
        assert (await s.error("timeline", path=p))["code"] == "no_timeline"
        assert (await s.error("findings", path=p, rule="nope"))["code"] == "bad_option"
        assert (await s.error("diff", path=p, new=p, by="nope"))["code"] == "bad_option"
        # the same file again still answers (nothing is left half-open)
        assert (await s.ok("top", path=p, limit=1))["returned"] == 1

    with_server(script)


@pytest.fixture(scope="module")
def job_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two ranks of a 128-rank job imported as a store (one local Dask worker)."""
    pytest.importorskip("duckdb")
    if not SHARED_TRACES.is_dir():
        pytest.skip("../shared/traces is absent")
    shared_traces = SHARED_TRACES
    store = tmp_path_factory.mktemp("job") / "store"
    traces = [str(shared_traces / f"hta_128rank_sampled_rank-{r}.json.gz") for r in (0, 1)]
    cmd = [sys.executable, "-m", "kernelscope", "import", *traces, "--store", str(store), "--workers", "1"]
    proc = subprocess.run(cmd, env=env(), capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    return store


@pytest.mark.slow
@pytest.mark.traces
def test_every_tool_is_bounded_on_the_largest_trace(shared_traces: Path, job_store: Path) -> None:
    trace = shared_traces / LARGEST
    if not trace.exists():
        pytest.skip(f"{LARGEST} is absent")
    other = shared_traces / "tracelens_mi300_ddp_resnet_actckpt_train_rank0.json.gz"
    path = str(trace)

    def rows_within(doc: dict[str, Any], rows: str, limit: int) -> None:
        assert len(doc[rows]) == doc["returned"] <= limit
        assert doc["truncated"] is (doc["returned"] < doc["total_rows"])

    async def script(s: Session) -> None:
        summary, _, size = await s.call("summary", path=path)
        assert size < 16_000 and summary["contexts"] > 1000
        for by in ("line", "module", "op", "kernel"):
            for metric in ("time_ns", "cpu_time_ns", "bytes"):
                doc, is_error, size = await s.call("top", path=path, by=by, metric=metric, limit=5, max_bytes=3000)
                assert not is_error and size <= 3000
                rows_within(doc, "rows", 5)
        doc, _, size = await s.call("top", path=path, by="kernel", limit=500, max_bytes=4000)
        assert size <= 4000 and doc["truncated"] and doc["total_rows"] > doc["returned"]
        # keys and node ids from one answer work in the next call
        top = await s.ok("top", path=path, by="line", limit=1)
        key, node = top["rows"][0]["key"], top["rows"][0]["nodes"][0]
        src = await s.ok("source", path=path, key=key, context=50, max_bytes=1000)
        assert src["key"] == key and len(src["lines"]) <= 101
        doc, _, size = await s.call("tree", path=path, node=node, depth=50, limit=10, min_pct=0.0, max_bytes=2500)
        assert size <= 2500 and doc["truncated"] and doc["rows"][0]["node"] == node
        assert len(doc["rows"]) == doc["returned"] <= 10 < doc["total_rows"]
        shown = {r["node"] for r in doc["rows"]}
        assert all(r["parent"] in shown for r in doc["rows"][1:])  # a connected subtree
        deeper = await s.ok("tree", path=path, node=doc["rows"][-1]["node"], depth=1)
        assert deeper["rows"][0]["node"] == doc["rows"][-1]["node"]
        doc, _, size = await s.call("findings", path=path, limit=1, max_bytes=2000)
        assert size <= 2000 and len(doc["findings"]) <= 1 and doc["total_rows"] >= 2 and doc["truncated"]
        doc, _, size = await s.call("timeline", path=path, top=50, limit=3, max_bytes=2500)
        assert size <= 2500 and doc["devices"] and doc["truncated"]
        assert all(len(v) <= 3 for v in _lists(doc))
        doc, _, size = await s.call("diff", path=path, new=str(other), by="kernel", limit=4, max_bytes=3000)
        assert size <= 3000
        rows_within(doc, "rows", 4)
        assert doc["truncated"]
        # ranks: on one rank it says so; on a store it is bounded like the others
        assert (await s.error("ranks", path=path))["code"] == "bad_input"
        doc, _, size = await s.call("ranks", path=str(job_store), top=10, limit=2, max_bytes=2000)
        assert size <= 2000 and doc["ranks"] == [0, 1] and doc["collectives"] > 0 and doc["truncated"]
        assert all(len(v) <= 2 for v in _lists(doc))
        line = await s.ok("top", path=str(job_store), by="line", limit=1)  # the store opens as its merged profile
        assert line["returned"] == 1 and line["total"]["time_ns"] > 0
        doc, is_error, size = await s.call("history", path=path)
        assert size <= 16_000
        if is_error:
            assert doc["error"]["code"] in {"not_available", "bad_input"}

    with_server(script)


def _lists(node: Any) -> list[list[Any]]:
    if isinstance(node, dict):
        return [x for v in node.values() for x in _lists(v)]
    if isinstance(node, list):
        return [node, *(x for v in node for x in _lists(v))]
    return []


# --- bounds, without a server ----------------------------------------------------------------------------------


def test_bounded_keeps_rows_whole_and_says_what_it_left_out() -> None:
    rows = [{"key": "k" * 10_000, "value": i} for i in range(50)]  # hostile 10,000-character keys
    doc = bounded({"by": "kernel"}, "rows", rows, limit=20, max_bytes=25_000)
    assert doc["returned"] == len(doc["rows"]) == 2 and doc["total_rows"] == 50 and doc["truncated"]
    assert all(r["key"] == "k" * 10_000 for r in doc["rows"])  # keys are never clipped
    assert len(json.dumps(doc, separators=(",", ":"))) <= 25_000
    whole = bounded({}, "rows", rows[:3], limit=20, max_bytes=200_000)
    assert whole["truncated"] is False and whole["returned"] == 3


def test_capped_cuts_nested_lists_and_names_them() -> None:
    doc = {"devices": [{"name": "x" * 5_000, "gaps": list(range(1000))} for _ in range(3)], "n": 1}
    out = capped(doc, limit=100, max_bytes=2_000)
    assert len(json.dumps(out, separators=(",", ":"))) <= 2_000
    assert out["truncated"]["devices[0].gaps"] == 1000 and out["n"] == 1
    assert len(out["devices"][0]["name"]) < 5_000  # labels are clipped
    assert capped({"a": [1, 2]}, limit=5, max_bytes=1_000)["truncated"] == {}
    assert capped({"a": (1, 2, 3)}, limit=2, max_bytes=1_000) == {"a": [1, 2], "truncated": {"a": 3}}
