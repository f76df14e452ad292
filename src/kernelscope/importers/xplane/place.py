"""Place XLA op executions in the calling-context tree (DESIGN.md definitions, JAX flavour).

An executed instruction goes to

    outer user lines → <jit(fn)> → inner user lines, modules and scopes → [backward] → op (primitive) → kernel
    [→ parts]

where the lines are the instruction's trace-time Python stack (user frames only, ``attribute.userframes``)
split at the jitted function's own frame (the outer lines are the live run's recorded caller when there is
one), modules and scopes come from the ``op_name`` name stack (Flax ``CNN/Conv_0``, ``jax.named_scope``),
``[backward]`` marks work under ``transpose(...)`` (JAX gives the
transposed op the forward op's source line, so a line's cost includes its gradients), and the kernel is the
device kernel (GPU) or the HLO instruction (CPU). A fusion whose ops come from several ops or lines sits
under the common prefix of their lines, with one ``part`` per original op and line carrying an estimated
share of its measured time (by bytes and FLOPs) that sums exactly to the measured time. An instruction
without metadata goes under the line that called the jitted function, in a ``[no source in HLO]`` scope.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from ...attribute.compiled import common_prefix, split_exact
from ...attribute.userframes import display_path, is_user_file, resolve
from ...model import Frame, FrameKind, ProfileBuilder
from .hlo import HloModule, HloOp, Origin, SourceFrame
from .modules import ModuleNames

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


NO_SOURCE = "no source in HLO"  # the scope over instructions XLA added without metadata


def place(
    op: HloOp | None,
    kernel: Frame,
    module: HloModule | None,
    module_name: str,
    caller: tuple[Frame, ...] | None = None,
) -> Placement:
    """``caller``: the user frames of the call that ran this execution, when a live run recorded it; they
    replace the first trace's frames above the jitted function (the executable may be shared by call sites)."""
    origins = _origins(op)
    if op is None or not origins:
        # No source information of its own (a copy or layout change XLA added): under the line that called
        # the jitted function, in a scope that says why.
        stack = caller if caller is not None else user_frames(module.context) if module is not None else ()
        region_name = region_of_module(module_name)
        cut = _jit_frame(stack, region_name[4:-1] if region_name.startswith("jit(") else "")
        outer = [*stack[:cut], Frame.region(region_name)] if module_name else list(stack[:cut])
        name = op.opcode if op is not None else ""
        return Placement(
            (*outer, *stack[cut:], Frame.scope(NO_SOURCE), *([Frame.op(name)] if name else []), kernel), ()
        )
    primary = op.own or origins[0]
    # origins whose metadata lost its stack (XLA merged two instructions' names) say nothing about lines
    stacks = [user_frames(o.stack) for o in origins if o.stack] or [()]
    parts = _parts(origins, module.modules if module is not None else ModuleNames())
    stack = stacks[0] if all(s == stacks[0] for s in stacks) else common_prefix(stacks)
    region_name = primary.names.region or region_of_module(module_name)
    # the jitted function's frame: where the region starts (the common prefix may end above it, when the
    # fused ops' lines differ inside the function; then all of the prefix is above the region)
    cut = min(len(stack), *(_jit_frame(s, primary.names.function) for s in stacks))
    if module is not None and cut == len(stack) and not any(_has_frame(s, primary.names.function) for s in stacks):
        # a library's function jitted by the program (``jax.jit(net.apply)``): its frame is not a user
        # frame; the region starts below the executable's call line (the stack its instructions share)
        cut = _shared_length(user_frames(module.context), stack)
    scopes = common_prefix([o.names.scopes for o in origins]) if len(origins) > 1 else primary.names.scopes
    known = module.modules if module is not None else ModuleNames()
    known = known.with_classes(set().union(*(_classes(o.stack) for o in origins)))
    above = caller if caller is not None else stack[:cut]
    path: list[Frame] = [*above, Frame.region(region_name), *with_scopes(stack[cut:], scopes, known)]
    if any(o.names.backward for o in origins):
        path.append(Frame.backward())
    path.append(Frame.op(primary.names.primitive or op.opcode))
    path.append(kernel)
    return Placement(tuple(path), tuple(parts) if len(parts) > 1 else ())


def scope_frames(scopes: Sequence[str], known: ModuleNames | Collection[str] = ()) -> list[Frame]:
    """Name-stack scopes as frames: modules (``modules.ModuleNames``: Flax ``Conv_0``, Equinox
    ``eqx.nn.Linear``, Haiku ``linear_1``, or a class whose method is on the stack) get ``module`` frames with
    their path in the name stack (``CNN/Conv_0``); ``jax.named_scope`` names get ``scope`` frames. Inner
    ``jit(...)`` of library functions (``jit(relu)``) and einsum specs are left out. ``known`` may be a plain
    collection of class names."""
    names = known if isinstance(known, ModuleNames) else ModuleNames(classes=frozenset(known))
    out: list[Frame] = []
    path: list[str] = []
    for name in scopes:
        if not name or name.startswith(("jit(", "pjit(")) or "->" in name or name == "~":
            continue
        cls = names.module_class(name)
        if cls is not None:
            path.append(name)
            out.append(Frame.module_("/".join(path), cls))
        else:
            out.append(Frame.scope(name))
    return out


def with_scopes(
    lines: Sequence[Frame], scopes: Sequence[str], known: ModuleNames | Collection[str] = ()
) -> list[Frame]:
    """Interleave scope/module frames with the user lines inside the jitted function.

    A module whose class has a method on the stack (``CNN.__call__``) goes right above that method's line;
    the scopes before it go there too (name-stack order is kept); the rest go below the innermost line.
    ``known``: the executable's module evidence (``modules.ModuleNames``) or class names, including classes
    whose methods were on the stacks of the ops (a fusion's lines were cut to their common prefix).
    """
    at_line = {cls: i for i, f in enumerate(lines) if (cls := method_class(f.name))}
    names = known if isinstance(known, ModuleNames) else ModuleNames(classes=frozenset(known))
    frames = scope_frames(scopes, names.with_classes(at_line))
    if not frames:
        return list(lines)
    at = [len(lines)] * len(frames)
    bound = len(lines)
    for k in range(len(frames) - 1, -1, -1):
        f = frames[k]
        where = at_line.get(f.cls) if f.kind is FrameKind.MODULE and f.cls else None
        bound = min(bound, where) if where is not None else bound
        at[k] = bound
    out: list[Frame] = []
    k = 0
    for i, line in enumerate(lines):
        while k < len(frames) and at[k] <= i:
            out.append(frames[k])
            k += 1
        out.append(line)
    out.extend(frames[k:])
    return out


def _origins(op: HloOp | None) -> list[Origin]:
    if op is None:
        return []
    if op.fused:
        return list(op.fused)
    return [op.own] if op.own is not None else []


def _parts(origins: Sequence[Origin], known: ModuleNames) -> list[tuple[Frame, float]]:
    merged: dict[Frame, float] = {}
    for o in origins:
        users = [f for f in o.stack if is_user_source(f.file)]
        where = users[-1] if users else None
        modules = [
            f for f in scope_frames(o.names.scopes, known.with_classes(_classes(users))) if f.kind is FrameKind.MODULE
        ]
        frame = Frame.part(
            o.names.primitive or o.opcode,
            display_path(where.file) if where is not None else "",
            where.line if where is not None else 0,
            modules[-1].name if modules else "",
        )
        merged[frame] = merged.get(frame, 0.0) + max(o.bytes, o.flops / FLOPS_PER_BYTE, 0.0)
    return list(merged.items())


def _classes(stack: Sequence[SourceFrame]) -> set[str]:
    """Classes whose methods are on a user stack (``CNN`` for ``CNN.__call__``)."""
    return {cls for f in stack if (cls := method_class(f.function)) and is_user_source(f.file)}


def method_class(qualname: str) -> str:
    """``CNN.__call__`` -> ``CNN``; a function (``main``, ``main.<locals>.update``) -> ""."""
    head, dot, rest = qualname.partition(".")
    return head if dot and not rest.startswith("<locals>") else ""


def _has_frame(stack: Sequence[Frame], function: str) -> bool:
    return _jit_frame(stack, function) < len(stack)


def _shared_length(a: Sequence[Frame], b: Sequence[Frame]) -> int:
    n = 0
    while n < len(a) and n < len(b) and a[n] == b[n]:
        n += 1
    return n


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


__all__ = ["NO_SOURCE", "Placement", "Placer", "is_user_source", "place", "scope_frames", "user_frames", "with_scopes"]
