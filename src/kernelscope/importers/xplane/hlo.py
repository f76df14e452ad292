"""The HLO metadata join: from an executed instruction's name to the JAX ops and source lines it came from.

The ``/host:metadata`` plane holds each executable's ``HloProto``, keyed by program id. Every
instruction carries ``op_name`` (a JAX name stack, see ``namestack``) and a ``stack_frame_id`` into the
module's stack-frame tables (file names, function names, file locations, frames with 1-based parent
ids) → the trace-time Python stack, outermost first. A fusion's computation lists every instruction it
fused: those become its *origins*, with an estimated cost (bytes moved and FLOPs) for splitting the
fusion's measured time.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ...attribute.compiled import common_prefix
from .modules import ModuleNames, parameter_owners
from .namestack import NameStack, parse

# Element sizes in bytes by xla.PrimitiveType (xla_data.proto); unknown types count 4 bytes.
_ELEMENT_BYTES = {1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 1, 7: 2, 8: 4, 9: 8, 10: 2, 11: 4, 12: 8, 15: 8, 16: 2, 18: 16}
_TUPLE, _TOKEN = 13, 17
# Instructions that move or name data without computing: never an origin of their own.
_PLUMBING = frozenset(
    {"parameter", "constant", "tuple", "get-tuple-element", "bitcast", "after-all", "partition-id", "replica-id"}
)


@dataclass(frozen=True, slots=True)
class SourceFrame:
    file: str
    line: int
    function: str


@dataclass(frozen=True, slots=True)
class Origin:
    """One JAX op an instruction came from (for a fusion: one of the ops it fused)."""

    names: NameStack
    opcode: str  # the HLO opcode ("dot", "add", "custom-call")
    stack: tuple[SourceFrame, ...]  # trace-time Python stack, outermost first
    flops: float
    bytes: float
    dtypes: tuple[str, str] | None = None  # a convert's (from, to) element types ("f32", "bf16")


@dataclass(frozen=True, slots=True)
class HloOp:
    """An instruction that runs: a kernel on GPU, a thunk on CPU."""

    name: str
    opcode: str
    module: str
    own: Origin | None  # the instruction's own metadata (for a fusion, XLA copies its root's)
    fused: tuple[Origin, ...]  # the ops a fusion (or a called computation) holds; () otherwise


class HloModule:
    """Instructions of one executable, by name (HLO names are unique within a module)."""

    def __init__(self, proto: Any) -> None:
        self.name: str = proto.name
        self._frames = _StackFrames(proto.stack_frame_index)
        self._computations = {c.id: c for c in proto.computations}
        self._by_name: dict[str, tuple[Any, Any]] = {}
        for comp in proto.computations:
            for instr in comp.instructions:
                self._by_name[instr.name] = (instr, comp)
        self._ops: dict[str, HloOp | None] = {}
        self._context: tuple[SourceFrame, ...] | None = None
        self._jit_frame_seen = False
        self._shape_cache: dict[int, dict[int, Any]] = {}
        self._entry_id: int = proto.entry_computation_id
        self._modules: ModuleNames | None = None

    def __len__(self) -> int:
        return len(self._by_name)

    @property
    def context(self) -> tuple[SourceFrame, ...]:
        """Where the jitted function was called: the stack above the jitted function's own frame.

        Instructions XLA added without metadata (copies, wrapped helpers, layout changes) are placed here.
        Taken from the stacks that contain the function's frame (``apply_model`` for ``jit_apply_model``),
        the most common prefix wins (a few instructions carry short stacks, e.g. a comparator traced
        apart); without such a frame, the common prefix of all stacks.
        """
        if self._context is None:
            ids = {i.metadata.stack_frame_id for i, _c in self._by_name.values() if i.metadata.stack_frame_id}
            frames = [self._frames.stack(fid) for fid in sorted(ids)]
            function = self.name[4:] if self.name.startswith("jit_") else ""
            prefixes: Counter[tuple[SourceFrame, ...]] = Counter()
            for stack in frames:
                cut = jit_frame_index(stack, function)
                if cut is not None:
                    prefixes[stack[:cut]] += 1
            self._jit_frame_seen = bool(prefixes)
            if prefixes:
                self._context = max(prefixes.items(), key=lambda kv: (kv[1], len(kv[0])))[0]
            else:
                self._context = common_prefix(frames)
        return self._context

    @property
    def computations(self) -> dict[int, Any]:
        """The module's computations (``HloComputationProto``) by id."""
        return self._computations

    @property
    def entry_id(self) -> int:
        return self._entry_id

    def stack_of(self, frame_id: int) -> tuple[SourceFrame, ...]:
        """The Python stack (outermost first) of a stack frame id from an instruction's metadata."""
        return self._frames.stack(frame_id)

    @property
    def modules(self) -> ModuleNames:
        """Which name-stack scopes are modules (``modules.ModuleNames``): from the entry computation's
        parameters' names (``params['linear_1']['w']``)."""
        if self._modules is None:
            entry = self._computations.get(self._entry_id)
            names = [i.metadata.op_name for i in entry.instructions if i.opcode == "parameter"] if entry else []
            self._modules = ModuleNames(owners=parameter_owners(names))
        return self._modules

    @property
    def traced_function_on_stack(self) -> bool:
        """Whether the jitted function's own frame is on its instructions' stacks (a function the program
        wrote, as opposed to a library's eager op such as ``jit_add``)."""
        _ = self.context
        return self._jit_frame_seen

    def op(self, name: str) -> HloOp | None:
        hit = self._ops.get(name, _MISSING)
        if hit is _MISSING:
            hit = self._ops[name] = self._build(name)
        return hit  # type: ignore[return-value]

    def _build(self, name: str) -> HloOp | None:
        found = self._by_name.get(name)
        if found is None:
            return None
        instr, comp = found
        own = self._origin(instr, self._shapes(comp))
        fused: list[Origin] = []
        if instr.opcode == "fusion":
            for comp_id in instr.called_computation_ids:
                fused.extend(self._fused_origins(comp_id, seen=set()))
        return HloOp(name=name, opcode=instr.opcode, module=self.name, own=own, fused=tuple(fused))

    def _fused_origins(self, comp_id: int, seen: set[int]) -> Iterable[Origin]:
        comp = self._computations.get(comp_id)
        if comp is None or comp_id in seen:
            return
        seen.add(comp_id)
        shapes = self._shapes(comp)
        for instr in comp.instructions:
            if instr.opcode == "fusion":  # nested fusions (GPU block fusions)
                for inner in instr.called_computation_ids:
                    yield from self._fused_origins(inner, seen)
                continue
            origin = self._origin(instr, shapes)
            if origin is not None:
                yield origin

    def _shapes(self, comp: Any) -> dict[int, Any]:
        hit = self._shape_cache.get(comp.id)
        if hit is None:
            hit = self._shape_cache[comp.id] = {i.id: i.shape for i in comp.instructions}
        return hit

    def _origin(self, instr: Any, shapes: dict[int, Any]) -> Origin | None:
        op_name = instr.metadata.op_name
        if not op_name or instr.opcode in _PLUMBING:
            return None
        out_elems, out_bytes = _size(instr.shape)
        in_bytes = sum(_size(shapes[i])[1] for i in instr.operand_ids if i in shapes)
        flops = _real(out_elems)
        if instr.opcode == "dot" and instr.operand_ids and instr.operand_ids[0] in shapes:
            lhs = shapes[instr.operand_ids[0]].dimensions
            contracted = [lhs[d] for d in instr.dot_dimension_numbers.lhs_contracting_dimensions if 0 <= d < len(lhs)]
            flops = _real(2 * out_elems * math.prod(contracted))  # 2·M·N·K
        dtypes = None
        if instr.opcode == "convert" and instr.operand_ids and instr.operand_ids[0] in shapes:
            dtypes = (dtype_name(shapes[instr.operand_ids[0]].element_type), dtype_name(instr.shape.element_type))
        return Origin(
            names=parse(op_name),
            opcode=instr.opcode,
            stack=self._frames.stack(instr.metadata.stack_frame_id),
            flops=flops,
            bytes=_real(out_bytes + in_bytes),
            dtypes=dtypes,
        )


class _StackFrames:
    def __init__(self, index: Any) -> None:
        self._files = list(index.file_names)
        self._functions = list(index.function_names)
        self._locations = list(index.file_locations)
        self._frames = list(index.stack_frames)
        self._cache: dict[int, tuple[SourceFrame, ...]] = {}

    def stack(self, frame_id: int) -> tuple[SourceFrame, ...]:
        """Outermost first. Ids are 1-based; 0 means none; a cycle or bad id ends the walk."""
        hit = self._cache.get(frame_id)
        if hit is not None:
            return hit
        out: list[SourceFrame] = []
        seen: set[int] = set()
        fid = frame_id
        while 0 < fid <= len(self._frames) and fid not in seen:
            seen.add(fid)
            frame = self._frames[fid - 1]
            loc_id = frame.file_location_id
            if 0 < loc_id <= len(self._locations):
                loc = self._locations[loc_id - 1]
                out.append(
                    SourceFrame(
                        _at(self._files, loc.file_name_id), int(loc.line), _at(self._functions, loc.function_name_id)
                    )
                )
            fid = frame.parent_frame_id
        out.reverse()
        result = self._cache[frame_id] = tuple(out)
        return result


# xla.PrimitiveType numbers (xla_data.proto) -> names as JAX prints them
_DTYPE_NAMES = {1: "pred", 2: "s8", 3: "s16", 4: "s32", 5: "s64", 6: "u8", 7: "u16", 8: "u32", 9: "u64",
                10: "f16", 11: "f32", 12: "f64", 15: "c64", 16: "bf16", 18: "c128"}  # fmt: skip


def dtype_name(element_type: int) -> str:
    return _DTYPE_NAMES.get(int(element_type), f"type{int(element_type)}")


def jit_frame_index(stack: Sequence[SourceFrame], function: str) -> int | None:
    """Index of the jitted function's own frame in a trace-time stack (outermost first); None if absent."""
    if function:
        for i, f in enumerate(stack):
            if f.function == function or f.function.endswith("." + function):
                return i
    return None


def _real(value: int) -> float:
    """A count as a float, clamped to [0, 1e300] (damaged shapes must not overflow or go negative)."""
    return float(min(max(value, 0), 10**300))


def _at(table: list[str], one_based: int) -> str:
    return table[one_based - 1] if 0 < one_based <= len(table) else ""


def _size(shape: Any) -> tuple[int, int]:
    """(elements, bytes) of a shape; tuples add up their elements."""
    if shape.element_type == _TUPLE:
        elems = nbytes = 0
        for sub in shape.tuple_shapes:
            e, b = _size(sub)
            elems += e
            nbytes += b
        return elems, nbytes
    if shape.element_type == _TOKEN:
        return 0, 0
    elems = math.prod(shape.dimensions) if shape.dimensions else 1
    return elems, elems * _ELEMENT_BYTES.get(shape.element_type, 4)


_MISSING = object()

__all__ = ["HloModule", "HloOp", "Origin", "SourceFrame", "dtype_name", "jit_frame_index"]
