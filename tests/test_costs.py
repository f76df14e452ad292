"""The cost rules shared by live runs and imports: FLOPs and bytes from shapes (issue 7)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kernelscope.attribute.costs import op_bytes
from kernelscope.importers import import_file


def test_views_and_allocations_move_nothing() -> None:
    for op in ("aten::view", "aten::as_strided", "aten::detach", "aten::t", "aten::expand", "aten::empty"):
        assert op_bytes(op, [[1024, 1024]], [4]) == 0.0


def test_gemm_reads_its_inputs_and_writes_its_result() -> None:
    # (16x32) @ (32x64) in fp32: read 16*32 + 32*64, write 16*64 elements
    assert op_bytes("aten::mm", [[16, 32], [32, 64]], [4, 4]) == (16 * 32 + 32 * 64 + 16 * 64) * 4
    # addmm(bias, x, w): the bias is read too; the result is x @ w
    assert op_bytes("aten::addmm", [[64], [16, 32], [32, 64]], [2, 2, 2]) == (64 + 16 * 32 + 32 * 64 + 16 * 64) * 2


def test_elementwise_inplace_and_reductions() -> None:
    assert op_bytes("aten::add", [[8, 8], [8, 8], []], [4, 4, 0]) == 3 * 64 * 4  # two reads, one write
    assert op_bytes("aten::add_", [[8, 8], [8, 8]], [4, 4]) == 3 * 64 * 4  # writes its first input once
    assert op_bytes("aten::mul", [[8, 8], [8]], [4, 4]) == (64 + 8 + 64) * 4  # broadcast: output is the larger
    assert op_bytes("aten::sum", [[8, 8]], [2]) == 64 * 2  # a reduction's result is not worth counting
    assert op_bytes("aten::cat", [[[4, 4], [4, 4]], []], [4, 0]) == (16 + 16 + 32) * 4  # a tensor list, joined


def test_ops_without_tensor_inputs_and_autograd_nodes_defer_to_their_inner_ops() -> None:
    assert op_bytes("aten::zeros", [[], [], []], [0, 0, 0]) is None
    assert op_bytes("AddmmBackward0", [[16, 32]], [4]) is None
    assert op_bytes("torch::autograd::AccumulateGrad", [[16, 32]], [4]) is None


def test_flash_attention_kernels_read_their_own_layout() -> None:
    from kernelscope.attribute.costs import op_flops

    # SDPA takes (batch, heads, seq, dim); the flash kernel under it (batch, seq, heads, dim): same work
    sdpa = op_flops("aten::_scaled_dot_product_flash_attention", [[2, 8, 128, 64], [2, 8, 256, 64], [2, 8, 256, 64]])
    flash = op_flops("aten::_flash_attention_forward", [[2, 128, 8, 64], [2, 256, 8, 64], [2, 256, 8, 64]])
    assert sdpa == flash == 4.0 * 2 * 8 * 128 * 256 * 64
    grad = op_flops("aten::_flash_attention_backward", [[2, 128, 8, 64], [2, 128, 8, 64], [2, 256, 8, 64]])
    assert grad == 2.5 * flash


def _op(name: str, ts: float, dur: float, dims: list[Any]) -> dict[str, Any]:
    types = ["float" if d else "" for d in dims]
    args = {"Input Dims": dims, "Input type": types, "Concrete Inputs": [""] * len(dims)}
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": args}


def test_the_op_that_does_the_work_carries_both_flops_and_bytes(tmp_path: Path) -> None:
    x, w, b, out = [8, 16], [32, 16], [32], [8, 32]
    events = [
        _op("aten::linear", 0.0, 100.0, [x, w, b]),
        _op("aten::t", 1.0, 5.0, [w]),
        _op("aten::addmm", 10.0, 80.0, [b, x, [16, 32], [], []]),
        _op("aten::copy_", 12.0, 10.0, [out, [32]]),
        _op("aten::relu", 200.0, 50.0, [out]),
        _op("aten::clamp_min", 201.0, 40.0, [out, []]),
    ]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    rows = {k: v for k, v in import_file(str(path)).view(by="op", metrics=["flops", "bytes"]).rows}
    addmm_bytes = op_bytes("aten::addmm", [b, x, [16, 32], [], []], [4, 4, 4, 0, 0])
    assert rows["aten::addmm"] == {"flops": 2 * 8 * 16 * 32, "bytes": addmm_bytes}
    assert rows["aten::relu"] == {"flops": 0.0, "bytes": op_bytes("aten::relu", [out], [4])}
    # the outer linear and the helpers inside the work ops carry nothing (counted once, where the work is)
    assert "aten::linear" not in rows and "aten::copy_" not in rows and "aten::clamp_min" not in rows


def test_copy_writes_its_destination_without_reading_it() -> None:
    assert op_bytes("aten::copy_", [[10], [10]], [4, 4]) == 80.0  # reads src, writes dst
