"""Place XLA op executions in the calling-context tree (DESIGN.md definitions, JAX flavour).

An executed instruction goes to

    outer user lines → <jit(fn)> → inner user lines → [backward] → op (primitive) → kernel [→ parts]

where the lines are the instruction's trace-time Python stack (user frames only, ``collect.userframes``)
split at the jitted function's own frame, ``[backward]`` marks work under ``transpose(...)`` (JAX gives the
transposed op the forward op's source line, so a line's cost includes its gradients), and the kernel is the
device kernel (GPU) or the HLO instruction (CPU). A fusion whose ops come from several ops or lines sits
under the common prefix of their lines, with one ``part`` per original op and line carrying an estimated
share of its measured time (by bytes and FLOPs) that sums exactly to the measured time.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from ...attribute.compiled import common_prefix, split_exact
from ...collect.userframes import display_path, is_user_file, resolve
from ...model import Frame, ProfileBuilder
from .hlo import HloModule, HloOp, Origin, SourceFrame

# FLOPs that cost as much time as one byte moved; only the ratio between parts of one kernel matters.
FLOPS_PER_BYTE = 8.0


@dataclass(frozen=True, slots=True)
class Placement:
    kernel: tuple[Frame, ...]  # path from the root to the kernel frame
    parts: tuple[tuple[Frame, float], ...]  # (part frame, weight); empty when the kernel is not split

    @property
    def op(self) -> tuple[Frame, ...]:
        """Path to the kernel's op frame (where host-side time of the instruction goes)."""
        return self.kernel[:-1]


def is_user_source(file: str) -> bool:
    """The shared user-code rule; for a file that is not on this machine (a trace recorded elsewhere),
    judged by its path: anything outside an interpreter's library folders is the user's."""
    if not file or file.startswith("<"):
        return False
    if os.path.isfile(resolve(file)):
        return is_user_file(file)
    norm = file.replace("\\", "/")
    return not any(part in norm for part in ("/site-packages/", "/dist-packages/", "/lib/python3", "/lib/python2"))


def user_frames(stack: Sequence[SourceFrame]) -> tuple[Frame, ...]:
    return tuple(Frame.python(display_path(f.file), f.line, f.function) for f in stack if is_user_source(f.file))


def region_of_module(module: str) -> str:
    """``jit_train_step`` -> ``jit(train_step)`` (the name stack's spelling), for ops without metadata."""
    return f"jit({module[4:]})" if module.startswith("jit_") else module


def place(op: HloOp | None, kernel: Frame, module: HloModule | None, module_name: str) -> Placement:
    origins = _origins(op)
    if op is None or not origins:
        # No source information of its own (a copy XLA added): the line that called the jitted function.
        stack = user_frames(module.context) if module is not None else ()
        region_name = region_of_module(module_name)
        cut = _jit_frame(stack, region_name[4:-1] if region_name.startswith("jit(") else "")
        outer = [*stack[:cut], Frame.region(region_name)] if module_name else list(stack[:cut])
        name = op.opcode if op is not None else ""
        return Placement((*outer, *stack[cut:], *([Frame.op(name)] if name else []), kernel), ())
    primary = op.own or origins[0]
    stacks = [user_frames(o.stack) for o in origins]
    parts = _parts(origins)
    stack = stacks[0] if all(s == stacks[0] for s in stacks) else common_prefix(stacks)
    region_name = primary.names.region or region_of_module(module_name)
    cut = _jit_frame(stack, primary.names.function)
    path: list[Frame] = [*stack[:cut], Frame.region(region_name), *stack[cut:]]
    if any(o.names.backward for o in origins):
        path.append(Frame.backward())
    path.append(Frame.op(primary.names.primitive or op.opcode))
    path.append(kernel)
    return Placement(tuple(path), tuple(parts) if len(parts) > 1 else ())


def _origins(op: HloOp | None) -> list[Origin]:
    if op is None:
        return []
    if op.fused:
        return list(op.fused)
    return [op.own] if op.own is not None else []


def _parts(origins: Sequence[Origin]) -> list[tuple[Frame, float]]:
    merged: dict[Frame, float] = {}
    for o in origins:
        users = [f for f in o.stack if is_user_source(f.file)]
        where = users[-1] if users else None
        frame = Frame.part(
            o.names.primitive or o.opcode,
            display_path(where.file) if where is not None else "",
            where.line if where is not None else 0,
        )
        merged[frame] = merged.get(frame, 0.0) + max(o.bytes, o.flops / FLOPS_PER_BYTE, 0.0)
    return list(merged.items())


def _jit_frame(stack: Sequence[Frame], function: str) -> int:
    """Index of the jitted function's own frame (the region starts there); the end when not found."""
    if function:
        for i, f in enumerate(stack):
            if f.name == function or f.name.endswith("." + function):
                return i
    return len(stack)


class Placer:
    """Adds measured values at placements; a split kernel's time goes to its parts at ``finish``."""

    def __init__(self, builder: ProfileBuilder) -> None:
        self.builder = builder
        self._split: dict[int, tuple[list[int], list[float], dict[str, float]]] = {}

    def kernel_node(self, placement: Placement) -> int:
        node = self.builder.path(placement.kernel)
        if placement.parts and node not in self._split:
            part_nodes = [self.builder.child(node, f) for f, _w in placement.parts]
            self._split[node] = (part_nodes, [w for _f, w in placement.parts], {})
        return node

    def add_kernel(self, node: int, metric: str, value: float) -> None:
        split = self._split.get(node)
        if split is None or metric == "count":
            self.builder.add(node, metric, value)
        else:
            split[2][metric] = split[2].get(metric, 0.0) + value

    def finish(self) -> None:
        for part_nodes, weights, totals in self._split.values():
            for metric, total in totals.items():
                for part, share in zip(part_nodes, split_exact(total, weights), strict=True):
                    self.builder.add(part, metric, share)
        self._split.clear()


__all__ = ["Placement", "Placer", "is_user_source", "place", "user_frames"]
