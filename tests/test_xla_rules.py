"""XLA fusion boundaries read from a literal HLO graph, and the xla_fusion_boundary / xla_host_transfer rules on
literal profiles (the planted JAX program is in test_advisor_jax.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import build
from kernelscope.analysis.advisor import run_rules
from kernelscope.importers.xplane.boundaries import find_boundaries
from kernelscope.importers.xplane.hlo import HloModule
from kernelscope.importers.xplane.schema import HloProto
from kernelscope.model import Frame

F32 = 11
USER = "/work/prog/step.py"


def _module() -> HloModule:
    """main: x → a (loop: mul, tanh) → callback (custom call, line 15) → b (loop: sin) → c (loop: add, b's only
    user, same size) ; x → r (loop fusion holding a reduce: not elementwise) → d (loop: exp) ;
    x → e (loop: neg, two users) → f (loop: abs) and → g (loop: abs); an opt-barrier over a tuple (below)."""
    h = HloProto()
    m = h.hlo_module
    m.name = "jit_step"
    sfi = m.stack_frame_index
    sfi.file_names.append(USER)
    sfi.function_names.append("step")
    for line in (15, 16):
        loc = sfi.file_locations.add()
        loc.file_name_id, loc.function_name_id, loc.line = 1, 1, line
        frame = sfi.stack_frames.add()
        frame.file_location_id = len(sfi.file_locations)
    comp_ids = iter(range(10, 100))

    def body(opcodes: list[str]) -> int:
        comp = m.computations.add()
        comp.id = next(comp_ids)
        comp.name = f"fused_computation.{comp.id}"
        for k, opcode in enumerate(["parameter", *opcodes]):
            i = comp.instructions.add()
            i.name, i.opcode, i.id = f"{opcode}.{comp.id}.{k}", opcode, comp.id * 100 + k
        return comp.id

    entry = m.computations.add()
    entry.id, entry.name = 1, "main"
    m.entry_computation_id = 1

    def instr(name: str, opcode: str, operands: list[int], iid: int, frame: int = 0, **kw: Any) -> Any:
        i = entry.instructions.add()
        i.name, i.opcode, i.id = name, opcode, iid
        i.shape.element_type = F32
        i.shape.dimensions.append(1024)
        i.operand_ids.extend(operands)
        i.metadata.stack_frame_id = frame
        i.metadata.op_name = f"jit(step)/{name}" if frame else ""
        for k, v in kw.items():
            setattr(i, k, v)
        return i

    def loop(name: str, opcodes: list[str], operands: list[int], iid: int, frame: int = 2) -> None:
        instr(name, "fusion", operands, iid, frame, fusion_kind="kLoop").called_computation_ids.append(body(opcodes))

    instr("x", "parameter", [], 1)
    loop("a", ["multiply", "tanh"], [1], 2)
    instr("callback", "custom-call", [2], 3, 1, custom_call_target="xla_ffi_python_cpu_callback")
    loop("b", ["sine"], [3], 4)
    loop("c", ["add"], [4], 5)
    loop("r", ["reduce", "broadcast"], [1], 6)
    loop("d", ["exponential"], [6], 7)
    loop("e", ["negate"], [1], 8)
    loop("f", ["abs"], [8], 9)
    loop("g", ["abs"], [8], 10)
    # x → h (loop), k (loop) → tuple → opt-barrier (line 15) → element 0 → m (loop): only h fed m
    loop("h", ["negate"], [1], 20)
    loop("k", ["abs"], [1], 21)
    instr("t", "tuple", [20, 21], 22)
    instr("barrier", "opt-barrier", [22], 23, 1)
    instr("gte0", "get-tuple-element", [23], 24, tuple_index=0)
    loop("m", ["exponential"], [24], 25)
    return HloModule(h.hlo_module)


def test_boundaries_are_elementwise_kernels_split_by_a_custom_call_or_left_adjacent() -> None:
    found = {(b.producer, b.consumer): b for b in find_boundaries(_module())}
    assert set(found) == {("a", "b"), ("b", "c"), ("h", "m")}
    assert found[("h", "m")].between == "opt-barrier" and found[("h", "m")].where.line == 15  # type: ignore[union-attr]
    split, adjacent = found[("a", "b")], found[("b", "c")]
    assert split.between == "custom-call xla_ffi_python_cpu_callback"
    assert split.where is not None and split.where.line == 15  # the callback's line
    assert adjacent.between == "" and adjacent.where is not None and adjacent.where.line == 16  # the consumer's


def _row(line: int, pns: float, cns: float, between: str = "custom-call x") -> dict[str, Any]:
    return {"file": "p.py", "line": line, "function": "jit_step", "producer": "a", "consumer": "b",
            "between": between, "executions": 10, "producer_ns": pns, "consumer_ns": cns}  # fmt: skip


def test_fusion_boundary_saving_is_the_faster_kernels_time_and_small_ones_are_left_out() -> None:
    rows = [_row(5, 3e6, 2e6), _row(5, 1e6, 4e6), _row(9, 0.2e6, 0.3e6, "")]
    p = build([([Frame.python("p.py", 1, "f")], {"time_ns": 20e6})], {"framework": "jax", "fusion_boundaries": rows})
    found = [f for f in run_rules(p) if f.rule == "xla_fusion_boundary"]
    assert [(f.line, f.estimated_saving_ms, f.occurrences) for f in found] == [(5, 3.0, 10)]
    assert "4 elementwise kernels" in found[0].title and "split by custom-call x" in found[0].title


def test_host_transfer_sums_callbacks_per_line_and_reads_without_a_saving() -> None:
    line, loop = Frame.python("p.py", 7, "step"), Frame.python("p.py", 30, "<module>")
    cb = [loop, Frame.region("jit(step)"), line, Frame.op("pure_callback"), Frame.kernel("pure_callback.1", "cpu")]
    reads = [
        {"file": "p.py", "line": 31, "function": "<module>", "reads": 20, "ns": 8e6},
        {"file": "p.py", "line": 40, "function": "<module>", "reads": 1, "ns": 9e6},  # one read: not a loop
        {"file": "p.py", "line": 41, "function": "<module>", "reads": 6, "ns": 9e6},  # every 4th step (24 calls)
        {"file": "p.py", "line": 42, "function": "<module>", "reads": 24, "ns": 0.5e6},  # finished values: no wait
    ]
    p = build(
        [(cb, {"time_ns": 6e6, "count": 4}), ([loop, Frame.op("dot")], {"time_ns": 14e6})],
        {"framework": "jax", "host_reads": reads, "jit_calls": {"step": 24, "evaluate": 6}},
    )
    found = {f.line: f for f in run_rules(p) if f.rule == "xla_host_transfer"}
    assert set(found) == {7, 31}
    assert (found[7].estimated_saving_ms, found[7].occurrences) == (6.0, 4)
    assert "inside jitted code" in found[7].title and "pure_callback" in found[7].evidence
    assert (found[31].estimated_saving_ms, found[31].occurrences) == (None, 20)
    assert "host reads" in found[31].evidence


def test_host_transfer_needs_a_jax_profile() -> None:
    cb = [Frame.python("p.py", 7, "step"), Frame.op("pure_callback")]
    assert not [f for f in run_rules(build([(cb, {"time_ns": 6e6})], {})) if f.rule == "xla_host_transfer"]


@pytest.mark.traces
def test_the_mi300_jax_trace_has_no_xla_boundaries_or_host_transfers(shared_traces: Path) -> None:
    """A real GPU XPlane (TransformerEngine fused attention, 2-layer training step): its custom calls are fed by
    elementwise loop fusions but feed GEMMs and tuples, not elementwise kernels, and it holds no memcpy events
    and no callbacks: the XLA rules run on it and find nothing."""
    from kernelscope.importers import import_file

    p = import_file(str(shared_traces / "tracelens_mi300_jax_te_fused_attn_train.xplane.pb"))
    assert p.metadata["device_run"] and "fusion_boundaries" not in p.metadata
    assert not [f for f in run_rules(p) if f.rule in ("xla_fusion_boundary", "xla_host_transfer")]
