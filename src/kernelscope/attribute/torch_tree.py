"""PyTorch's in-memory event tree → calling-context tree.

Input is ``prof.profiler.kineto_results.experimental_event_tree()`` (FIELD-NOTES):
Python calls (``PyCall``/``PyCCall``, each knowing its *caller*'s file and line),
framework ops (``TorchOp``: name, sequence number, input shapes) and allocations.
Objects are read duck-typed, so tests can feed literals with the same attributes.

Context rules (DESIGN.md definitions):
- a Python call whose caller is user code adds ``python(file, caller line, function)``;
  library frames add nothing (collapsed);
- an ``nn.Module`` call adds ``module(attribute path, class)``;
- ops nest as ops; ``record_function`` scopes become scope frames (``ProfilerStep#N`` is dropped);
- ``autograd::engine::evaluate_function: XBackward0`` with sequence number *s* is placed under the
  context of the forward op with sequence number *s*, inside a ``backward`` frame;
- on a CPU-only run ``time_ns`` is an op's self time; with device activity it is kernel time.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..collect.userframes import display_path, is_user_file
from ..model import Frame, FrameKind, ProfileBuilder
from .costs import FLOP_RULES, op_bytes, op_flops

BACKWARD_PREFIX = "autograd::engine::evaluate_function: "
STEP_PREFIX = "ProfilerStep#"
# torch.compile's wrappers: context (region frames), not ops.
REGION_PREFIXES = ("Torch-Compiled Region", "CompiledFunction", "## Call CompiledFxGraph")

# (event, ctx node, frame ctx (nearest non-op), the parent PyCall's extra fields,
#  forward context of the backward we are in (-1: none), scopes applied on the path)
_Item = tuple[Any, int, int, Any, int, "tuple[int, ...]", bool]


@dataclass
class _Scope:
    start: int
    end: int
    name: str
    metrics: dict[str, float]


class CompiledPlacer(Protocol):
    """Places an Inductor kernel under the lines it fused (see collect.compile)."""

    def place(
        self, name: str, backward: bool, ctx: int, builder: ProfileBuilder, metrics: dict[str, float], as_op: bool
    ) -> int | None:
        """Add the kernel's metrics at its own context and return its node; None for an unknown kernel.
        ``as_op``: place it as an op frame (it has child ops of its own)."""
        ...

    def enter_graph(self) -> None:
        """A new ``## Call CompiledFxGraph ##`` began: restart per-call kernel counters."""
        ...


@dataclass
class WalkState:
    """What the walk carries between sessions (activate/deactivate windows)."""

    fwd_ctx: dict[int, int] = field(default_factory=dict)  # sequence number -> context node
    corr_node: dict[int, int] = field(default_factory=dict)  # op correlation id -> node
    events: int = 0
    regions: int = 0  # torch.compile regions met (compiled code ran in this window)


@dataclass
class TreeWalker:
    builder: ProfileBuilder
    module_path: Callable[[int], tuple[str, str] | None]  # self_ptr -> (attribute path, class)
    device_run: bool = False  # time_ns from device kernels, not host op time
    scope_metrics: Mapping[str, deque[dict[str, float]]] = field(default_factory=dict)
    compiled: CompiledPlacer | None = None
    state: WalkState = field(default_factory=WalkState)
    shapes: bool = True  # the window recorded input shapes: FLOPs and bytes can be computed
    _py_frames: dict[tuple[str, int, str], Frame | None] = field(default_factory=dict)
    # record_function scopes are leaves in PyTorch's tree: we nest by time, per thread
    _open: dict[int, list[int]] = field(default_factory=dict)  # tid -> stack of scope ids
    _scopes: list[_Scope] = field(default_factory=list)
    _scope_done: set[int] = field(default_factory=set)
    _compile_sids: set[int] = field(default_factory=set)  # scopes that are torch.compile compiling
    _tags: dict[Any, str] = field(default_factory=dict)  # profiler tag enum -> its name
    _op_frames: dict[str, int] = field(default_factory=dict)  # op name -> interned frame index

    def _tag(self, ev: Any) -> str:
        tag = ev.tag
        name = self._tags.get(tag)
        if name is None:
            name = self._tags[tag] = tag.name
        return name

    def _op(self, parent: int, name: str) -> int:
        idx = self._op_frames.get(name)
        if idx is None:
            idx = self._op_frames[name] = self.builder.intern(Frame.op(name))
        return self.builder.child_at(parent, idx)

    def _enter_scopes(self, ev: Any, ctx: int, applied: tuple[int, ...]) -> tuple[int, tuple[int, ...]]:
        """Put the scopes that hold ``ev`` but not yet on its path above it.

        A scope is entered at ``ev`` when it opened within ``ev``'s parent; a parent that straddles
        the scope's start or end (the scope's own enter/exit machinery) keeps its children outside.
        """
        opened = self._open.get(ev.start_tid)
        if not opened:
            return ctx, applied
        t = ev.start_time_ns
        while opened and self._scopes[opened[-1]].end <= t:
            opened.pop()
        bounds: tuple[int, int] | None = None  # the parent's start and end, read only when needed
        for sid in opened:
            if sid in applied:
                continue
            sc = self._scopes[sid]
            if ev.end_time_ns > sc.end:
                continue
            if bounds is None:
                parent = ev.parent
                bounds = (parent.start_time_ns, parent.end_time_ns) if parent is not None else (-1, 1 << 62)
            if sc.start < bounds[0] or bounds[1] < sc.end:
                continue
            # `## Call CompiledFxGraph <key> ##` is a compiled-graph region, however it was recorded
            frame = Frame.region(sc.name.strip("# ")) if sc.name.startswith("## ") else Frame.scope(sc.name)
            ctx = self.builder.child(ctx, frame)
            if sid not in self._scope_done:
                self._scope_done.add(sid)
                self.builder.add_many(ctx, sc.metrics)
            applied = (*applied, sid)
        return ctx, applied

    def _open_annotation(self, ev: Any, name: str) -> None:
        opened = self._open.get(ev.start_tid, ())
        if any(sid in self._compile_sids and self._scopes[sid].end > ev.start_time_ns for sid in opened):
            return  # phases inside a compile: folded into it
        if _is_compile_phase(name):
            self._open_scope(ev, COMPILING_SCOPE)
            self._compile_sids.add(len(self._scopes) - 1)
        elif not name.startswith(STEP_PREFIX):
            self._open_scope(ev, name)
            if self.compiled is not None and name.startswith("## Call CompiledFxGraph"):
                self.compiled.enter_graph()

    def _open_scope(self, ev: Any, name: str) -> None:
        queue = self.scope_metrics.get(name)
        sid = len(self._scopes)
        self._scopes.append(_Scope(ev.start_time_ns, ev.end_time_ns, name, queue.popleft() if queue else {}))
        opened = self._open.setdefault(ev.start_tid, [])
        while opened and self._scopes[opened[-1]].end <= ev.start_time_ns:
            opened.pop()
        opened.append(sid)

    # --- frames -----------------------------------------------------------------
    def _python(self, file: str, line: int, function: str) -> Frame | None:
        key = (file, line, function)
        frame = self._py_frames.get(key, self)  # self = sentinel
        if frame is self:
            if function.startswith("torch_dynamo_resume_in_"):
                from ..collect.compile.provenance import original_function

                function = original_function(function)
            frame = Frame.python(display_path(file), line, function) if is_user_file(file) else None
            self._py_frames[key] = frame
        return frame  # type: ignore[return-value]

    # --- the walk ---------------------------------------------------------------
    def walk(self, roots: Iterable[Any]) -> None:
        b = self.builder
        st = self.state
        # stack items: (event, ctx node, frame ctx (nearest non-op), user fn of parent PyCall,
        #               forward context of the backward we are in (-1: none), scopes on the path)
        roots = list(roots)
        top = {id(r) for r in roots}
        tags = self._tags
        user_files: dict[str, bool] = {}
        stack: list[_Item] = [(r, 0, 0, None, -1, (), False) for r in reversed(roots)]
        open_scopes = self._open
        events = 0
        while stack:
            ev, ctx, fctx, user_fn, bwd_base, applied, measured = stack.pop()
            events += 1
            tag = tags.get(ev.tag) or self._tag(ev)
            children = ev.children
            if open_scopes and tag != "Allocation":
                new_ctx, applied = self._enter_scopes(ev, ctx, applied)
                if new_ctx != ctx:
                    ctx = fctx = new_ctx
            if tag == "PyCall" or tag == "PyCCall":
                ex = ev.extra_fields
                caller = ex.caller
                node = ctx
                try:
                    file = caller.file_name
                    user = user_files.get(file)
                    if user is None:
                        user = user_files[file] = is_user_file(file)
                    # most calls come from library code: read the line and function only for user files
                    frame = self._python(file, caller.line_number, caller.function_name) if user else None
                    if (
                        frame is not None
                        and id(ev) in top
                        and tag == "PyCall"
                        and ex.callsite.function_name == frame.name
                    ):
                        # a frame already running when recording began reports itself, at that
                        # moment's line, as its caller: a stale line, not a call site
                        frame = None
                except UnicodeDecodeError:  # torch can hand back undecodable names (dynamo frames)
                    frame = None
                if frame is not None and b.frame_of(node) != frame:
                    # (a builtin call and the LineMode's __torch_function__ inside it report one line)
                    node = b.child(node, frame)
                fn = None  # the PyCall's extra fields: its callsite is read only if an op sits right below
                if tag == "PyCall":
                    mod = ex.module
                    if mod is not None:
                        info = self.module_path(mod.self_ptr)
                        path, cls = info if info is not None else (mod.cls_name, mod.cls_name)
                        node = b.child(node, Frame.module_(path, cls))
                    fn = ex
                if children:
                    nf = node if node != ctx else fctx
                    stack.extend((c, node, nf, fn, bwd_base, applied, measured) for c in reversed(children))
                continue
            if tag == "Allocation":
                size = ev.extra_fields.alloc_size
                if size > 0:
                    b.add(ctx, "alloc_bytes", float(size))
                continue
            if tag != "TorchOp":
                continue  # Kineto/backend/vulkan records: device work comes from kineto events
            self._torch_op(ev, ctx, fctx, user_fn, bwd_base, applied, measured, stack)
        st.events += events

    def _torch_op(
        self,
        ev: Any,
        ctx: int,
        fctx: int,
        user_fn: Any,
        bwd_base: int,
        applied: tuple[int, ...],
        measured: bool,
        stack: list[_Item],
    ) -> None:
        b = self.builder
        st = self.state
        ex = ev.extra_fields
        try:
            name: str = ev.name
        except UnicodeDecodeError:  # seen with torch.compile on 2.13: a corrupt name
            name = "<undecodable op name>"
        scope = ex.scope.name
        children = ev.children

        # an op called straight from a user function (no builtin call in between, e.g. `x + y`):
        # we know the function, not the line; use its first line.
        if user_fn is not None:
            try:
                site = user_fn.callsite
                frame = self._python(site.file_name, site.line_number, site.function_name)
            except UnicodeDecodeError:
                frame = None
            if frame is not None:
                ctx = fctx = b.child(ctx, frame)

        tags = self._tags
        child_time = 0
        allocs = 0.0
        has_child_op = False
        for c in children:
            t = tags.get(c.tag) or self._tag(c)
            if t == "TorchOp":
                child_time += c.duration_time_ns
                has_child_op = True
            elif t == "Allocation":
                size = c.extra_fields.alloc_size
                if size > 0:
                    allocs += size
        self_ns = float(max(ev.duration_time_ns - child_time, 0))

        if not children and "::" not in name and _is_annotation(ev):
            # a record_function range: PyTorch's tree has it as a leaf; it nests by time, like a scope
            self._open_annotation(ev, name)
            return

        if scope == "USER_SCOPE":
            # steps would split the tree once per step: drop them
            if not name.startswith(STEP_PREFIX):
                self._open_scope(ev, name)
            if self.compiled is not None and name.startswith("## Call CompiledFxGraph"):
                self.compiled.enter_graph()
            if children:
                stack.extend((c, ctx, fctx, None, bwd_base, applied, measured) for c in reversed(children))
            return

        wrapper = False
        folded = False
        if name.startswith(BACKWARD_PREFIX):
            bwd_name = name[len(BACKWARD_PREFIX) :]
            fwd = st.fwd_ctx.get(ex.sequence_number) if ex.sequence_number >= 0 else None
            if fwd is not None:
                bwd_base, base = fwd, b.child(fwd, Frame.backward())
            elif bwd_base >= 0:
                base = fctx  # already inside a backward frame
            else:
                bwd_base, base = fctx, b.child(fctx, Frame.backward())
            node = fctx = self._op(base, bwd_name)
            # a compiled graph's backward: its own time is the wrapper's (and a lazy compile's), not kernels'
            wrapper = bwd_name == "CompiledFunctionBackward"
        elif scope == "BACKWARD_FUNCTION" and b.frame_of(ctx).name == name:
            node = ctx  # the node inside `evaluate_function: X` is X again: fold it in (one call, not two)
            wrapper = name == "CompiledFunctionBackward"
            folded = True
        elif name.startswith(REGION_PREFIXES):
            if ex.sequence_number >= 0 and bwd_base < 0:
                st.fwd_ctx[ex.sequence_number] = fctx
            if self.compiled is not None and name.startswith("## Call CompiledFxGraph"):
                self.compiled.enter_graph()
            node = fctx = b.child(ctx, Frame.region(name.strip("# ")))
            st.regions += 1
            wrapper = True  # region self time is wrapper overhead and compiling, not kernels
        else:
            if ex.sequence_number >= 0 and bwd_base < 0:
                st.fwd_ctx[ex.sequence_number] = fctx
            # Inductor kernels are leaves; extern calls (aten::mm from the graph's wrapper) sit directly
            # under the graph call and may have child ops: those go along, under the placed op.
            if self.compiled is not None and (not has_child_op or _is_graph_call(b.frame_of(ctx))):
                metrics = {"count": 1.0, "cpu_time_ns": self_ns}
                if not self.device_run:
                    metrics["time_ns"] = self_ns
                if allocs:
                    metrics["alloc_bytes"] = allocs
                place_ctx = bwd_base if bwd_base >= 0 else fctx
                placed = self.compiled.place(name, bwd_base >= 0, place_ctx, b, metrics, has_child_op)
                if placed is not None:
                    if children:
                        stack.extend((c, placed, fctx, None, bwd_base, applied, measured) for c in reversed(children))
                    return
            node = self._op(ctx, name)

        if not folded:
            b.add(node, "count", 1.0)
        b.add(node, "cpu_time_ns", self_ns)
        if not (self.device_run or wrapper or (self._compile_sids and any(a in self._compile_sids for a in applied))):
            b.add(node, "time_ns", self_ns)  # work done while compiling is host time, not the program's
        if allocs:
            b.add(node, "alloc_bytes", allocs)
        corr = ev.correlation_id
        if corr:
            st.corr_node[corr] = node

        if self.shapes:
            # FLOPs on the innermost op that has a rule (aten::linear → aten::addmm counts at addmm),
            # as the trace importer does; bytes on leaf ops
            if name in FLOP_RULES and not any(
                (tags.get(c.tag) or self._tag(c)) == "TorchOp" and c.name in FLOP_RULES for c in children
            ):
                flops = op_flops(name, _shapes(ex.inputs), ex.inputs)
                if flops:
                    b.add(node, "flops", flops)
            # bytes on the outermost op that recorded tensor inputs: what it reads and writes
            # (attribute.costs.op_bytes); the ops inside it are how it does that, not more traffic
            if not measured:
                nbytes = op_bytes(name, _shapes(ex.inputs), _itemsizes(ex.inputs))
                if nbytes is not None:
                    measured = True
                    if nbytes:
                        b.add(node, "bytes", nbytes)
        if children:
            stack.extend((c, node, fctx, None, bwd_base, applied, measured) for c in reversed(children))


COMPILING_SCOPE = "torch.compile: compiling"
_COMPILE_PHASES = frozenset({"dynamo", "entire_frame_compile"})
_ANNOTATION_CALLS = ("RecordFunctionFast", "_record_function_enter")


def _is_compile_phase(name: str) -> bool:
    """Dynamo's ``dynamo_timed`` phases (``X (dynamo_timed)``, ``X_data: compile_id=...``) and their outer ones."""
    return name in _COMPILE_PHASES or name.endswith("(dynamo_timed)") or "_data: compile_id=" in name


def _is_annotation(ev: Any) -> bool:
    """A record_function range: opened from Python through ``_record_function_enter_new`` or
    ``RecordFunctionFast.__enter__`` (then it has no children of its own in the tree)."""
    parent = ev.parent
    if parent is None:
        return False
    try:
        pname = parent.name
    except UnicodeDecodeError:
        return False
    return any(call in pname for call in _ANNOTATION_CALLS)


def _is_graph_call(frame: Frame) -> bool:
    return frame.kind is FrameKind.REGION and frame.name.startswith("Call CompiledFxGraph")


def _shapes(inputs: Iterable[Any]) -> list[Any]:
    """Per input: a tensor's sizes, a tensor list's list of sizes, else None."""
    out: list[Any] = []
    for i in inputs:
        if isinstance(i, list):
            out.append([[int(s) for s in t.sizes] for t in i if getattr(t, "sizes", None) is not None] or None)
            continue
        sizes = getattr(i, "sizes", None)
        out.append([int(s) for s in sizes] if sizes is not None else None)
    return out


def _itemsizes(inputs: Iterable[Any]) -> list[int]:
    out: list[int] = []
    for i in inputs:
        t = i[0] if isinstance(i, list) and i else i
        dtype = getattr(t, "dtype", None)
        out.append(int(getattr(dtype, "itemsize", 0) or 0) if getattr(t, "sizes", None) is not None else 0)
    return out
