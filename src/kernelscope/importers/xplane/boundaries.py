"""Fusion boundaries inside a jitted function: two elementwise kernels XLA left apart, read from the HLO graph.

XLA fuses a chain of elementwise ops into one loop kernel that reads its inputs and writes its output once.
When an elementwise kernel's only consumer is another elementwise kernel of the same size, or when the two
are separated by an instruction XLA cannot fuse through (a custom call such as a host callback of
``jax.pure_callback``, an ``opt-barrier`` where the backend keeps it), the intermediate array goes through
memory once more: written by the first kernel, read back by the second. ``find_boundaries`` lists those
pairs in the executed computations of a module (the entry computation and the bodies of loops,
conditionals and calls), with the user line of what split them (the custom call's line, else the second
kernel's line). On XLA:CPU (jax 0.10.2) ``jax.lax.optimization_barrier`` is removed before fusion, so it
splits nothing there.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ...model import Frame
from .hlo import HloModule
from .place import user_frames

# Elementwise HLO opcodes: one output element from the same element of each input.
ELEMENTWISE = frozenset(
    [
        "abs",
        "add",
        "and",
        "atan2",
        "cbrt",
        "ceil",
        "clamp",
        "compare",
        "convert",
        "cosine",
        "divide",
        "erf",
        "exponential",
        "exponential-minus-one",
        "floor",
        "imag",
        "is-finite",
        "log",
        "log-plus-one",
        "logistic",
        "maximum",
        "minimum",
        "multiply",
        "negate",
        "not",
        "or",
        "popcnt",
        "power",
        "real",
        "remainder",
        "round-nearest-afz",
        "round-nearest-even",
        "rsqrt",
        "select",
        "shift-left",
        "shift-right-arithmetic",
        "shift-right-logical",
        "sign",
        "sine",
        "sqrt",
        "subtract",
        "tan",
        "tanh",
        "xor",
    ]
)
# Inside a loop fusion these move or name data without breaking "elementwise".
_INSIDE_OK = frozenset({"parameter", "constant", "broadcast", "bitcast", "reshape", "iota", "tuple"})
# Between two kernels these only name data: look through them.
_PLUMBING = frozenset({"bitcast", "reshape"})  # and tuples, get-tuple-elements (``_sources``)
# What a fusion cannot cross.
_SPLITTERS = frozenset({"custom-call", "opt-barrier"})
# Computations whose instructions run as kernels of their own (not fused bodies or reducers).
_RUNS_BODIES = frozenset({"while", "conditional", "call", "async-start"})


@dataclass(frozen=True, slots=True)
class Boundary:
    producer: str  # HLO instruction names of the two kernels
    consumer: str
    between: str  # what split them: "custom-call <target>", "opt-barrier", or "" (adjacent, not fused)
    where: Frame | None  # the user line of the splitter when it has one, else of the consumer


def find_boundaries(module: HloModule) -> list[Boundary]:
    out: list[Boundary] = []
    comps = module.computations
    for comp in _executed(comps, module.entry_id):
        by_id = {i.id: i for i in comp.instructions}
        users: dict[int, int] = {}
        for i in comp.instructions:
            for o in i.operand_ids:
                users[o] = users.get(o, 0) + 1
        for c in comp.instructions:
            if not _elementwise_kernel(c, comps):
                continue
            for operand in c.operand_ids:
                for b, index in _sources(by_id, operand):
                    if b.opcode in _SPLITTERS:
                        between = f"custom-call {b.custom_call_target}" if b.opcode == "custom-call" else b.opcode
                        # an opt-barrier passes tuple element k through: only element k fed the consumer
                        inner = b.operand_ids if b.opcode == "custom-call" or index < 0 else b.operand_ids[:1]
                        for iid in inner:
                            for p, _k in _sources(by_id, iid, index if b.opcode == "opt-barrier" else -1):
                                if _elementwise_kernel(p, comps):
                                    where = _line(module, b) or _line(module, c)
                                    out.append(Boundary(p.name, c.name, between, where))
                    elif _elementwise_kernel(b, comps) and users.get(b.id, 0) == 1 and _elements(b) == _elements(c):
                        out.append(Boundary(b.name, c.name, "", _line(module, c)))
    return out


def _executed(comps: dict[int, Any], entry: int) -> Iterable[Any]:
    seen: set[int] = set()
    todo = [entry]
    while todo:
        cid = todo.pop()
        comp = comps.get(cid)
        if comp is None or cid in seen:
            continue
        seen.add(cid)
        yield comp
        for i in comp.instructions:
            if i.opcode in _RUNS_BODIES:
                todo.extend(i.called_computation_ids)


def _elementwise_kernel(instr: Any, comps: dict[int, Any]) -> bool:
    if instr.opcode in ELEMENTWISE:
        return True
    if instr.opcode != "fusion" or instr.fusion_kind != "kLoop":
        return False
    body = [comps.get(cid) for cid in instr.called_computation_ids]
    return all(
        b is not None and all(i.opcode in ELEMENTWISE or i.opcode in _INSIDE_OK for i in b.instructions) for b in body
    )


def _sources(by_id: dict[int, Any], iid: int, index: int = -1) -> list[tuple[Any, int]]:
    """The instructions whose data reach ``iid`` through plumbing only (bitcasts, reshapes, tuples and
    get-tuple-elements, following the element index), each with the tuple index still pending at it (-1:
    none; an ``opt-barrier`` passes its tuple through, so the index applies to its operand)."""
    out: list[tuple[Any, int]] = []
    seen: set[tuple[int, int]] = set()
    todo = [(iid, index)]
    while todo:
        iid, index = todo.pop()
        instr = by_id.get(iid)
        if instr is None or (iid, index) in seen:
            continue
        seen.add((iid, index))
        if instr.opcode == "get-tuple-element" and instr.operand_ids:
            todo.append((instr.operand_ids[0], int(instr.tuple_index)))
        elif instr.opcode == "tuple":
            picked = [instr.operand_ids[index]] if 0 <= index < len(instr.operand_ids) else list(instr.operand_ids)
            todo.extend((o, -1) for o in picked)
        elif instr.opcode in _PLUMBING and instr.operand_ids:
            todo.append((instr.operand_ids[0], index))
        else:
            out.append((instr, index))
    return out


def _elements(instr: Any) -> int:
    return math.prod(instr.shape.dimensions) if instr.shape.dimensions else 1


def _line(module: HloModule, instr: Any) -> Frame | None:
    frames = user_frames(module.stack_of(instr.metadata.stack_frame_id)) if instr.metadata.stack_frame_id else ()
    return frames[-1] if frames else None


__all__ = ["ELEMENTWISE", "Boundary", "find_boundaries"]
