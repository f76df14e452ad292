"""The store's keyed rows use the same normalised keys ``kernelscope diff`` matches on."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelscope.analysis.diff import diff
from kernelscope.model import Frame, ProfileBuilder, load
from kernelscope.store import BYS, KEYED_SCHEMA, keyed_rows, keyed_table

DATA = Path(__file__).parent / "data" / "tiny_transformer_cpu.ksprof"


@pytest.mark.parametrize("by", BYS)
def test_keyed_rows_match_diff_keys_and_totals(by: str) -> None:
    profile = load(str(DATA))
    table = keyed_rows(profile, by)
    assert table.schema == KEYED_SCHEMA
    assert set(table["by"].to_pylist()) == {by}
    got = {k: v for k, v in zip(table["key"].to_pylist(), table["time_ns"].to_pylist(), strict=True) if v}
    want = {r.key: r.new for r in diff(profile, profile, by=by, metric="time_ns").rows}
    assert got == pytest.approx(want)
    assert sum(table["time_ns"].to_pylist()) == pytest.approx(profile.total("time_ns"))


def test_keys_are_normalised_and_count_is_own_calls() -> None:
    b = ProfileBuilder()
    line = b.child(0, Frame.python("/usr/lib/python3/site-packages/lib/mod.py", 7, "f"))
    op = b.child(line, Frame.op("aten::mm"))
    k1 = b.child(op, Frame.kernel("triton_poi_fused_add_0", "cuda:0"))
    k2 = b.child(op, Frame.kernel("triton_poi_fused_add_3", "cuda:0"))
    b.add_many(op, {"count": 2, "cpu_time_ns": 5})
    b.add_many(k1, {"time_ns": 10, "count": 1})
    b.add_many(k2, {"time_ns": 30, "count": 3})
    p = b.build({"device_run": True})
    kernels = keyed_rows(p, "kernel").to_pylist()
    assert kernels == [
        {"by": "kernel", "key": "triton_poi_fused_add", "time_ns": 40.0, "cpu_time_ns": 0.0, "count": 4.0,
         "flops": 0.0, "bytes": 0.0},
        {"by": "kernel", "key": None, "time_ns": 0.0, "cpu_time_ns": 5.0, "count": 0.0, "flops": 0.0, "bytes": 0.0},
    ]  # fmt: skip
    lines = keyed_rows(p, "line").to_pylist()
    assert lines == [
        {"by": "line", "key": "lib/mod.py:7", "time_ns": 40.0, "cpu_time_ns": 5.0, "count": 0.0, "flops": 0.0,
         "bytes": 0.0}
    ]  # fmt: skip
    ops = keyed_rows(p, "op").to_pylist()
    assert ops[0]["key"] == "aten::mm" and ops[0]["count"] == 2.0
    assert keyed_table(p).num_rows == sum(keyed_rows(p, by).num_rows for by in BYS)


def test_unknown_grouping_is_a_usage_error() -> None:
    from kernelscope.errors import UsageError

    with pytest.raises(UsageError):
        keyed_rows(load(str(DATA)), "tree")
