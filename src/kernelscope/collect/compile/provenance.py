"""Pure provenance: which original ops, modules and user lines each Inductor kernel fused.

Holds the value types (:class:`FusedOrigin`, :class:`GraphRecord`), the parsing of FX node
metadata (stack traces, Dynamo module paths, op names, FLOP/byte costs from fake-tensor metas),
the turning of Inductor's kernel→post-grad-node map into a :class:`GraphRecord`, and
:class:`GraphTable`, which answers "what did this profiled kernel call fuse". No torch import and
no private API: nodes are duck-typed (``name``, ``target``, ``args``, ``meta``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ...attribute.compiled import FusedOrigin
from ...attribute.costs import op_flops
from ...attribute.userframes import display_path, is_user_file
from ...model import Frame

# Ops that only re-describe memory: they move no bytes.
_VIEW_OPS = frozenset(
    {
        "aten::view",
        "aten::_unsafe_view",
        "aten::reshape",
        "aten::permute",
        "aten::t",
        "aten::transpose",
        "aten::expand",
        "aten::squeeze",
        "aten::unsqueeze",
        "aten::slice",
        "aten::select",
        "aten::as_strided",
        "aten::alias",
        "aten::detach",
    }
)


@dataclass(frozen=True)
class GraphRecord:
    """What one inner compilation produced (a forward or a backward graph)."""

    graph_id: int | None
    backward: bool
    compile_id: str | None
    compile_time_s: float
    # kernel name (as in the output code, no graph prefix) -> origins of each call, in call order
    kernels: dict[str, tuple[tuple[FusedOrigin, ...], ...]]
    # extern/fallback calls by profiler op name ("aten::mm") -> origins of each call, in call order
    externs: dict[str, tuple[tuple[FusedOrigin, ...], ...]]


# --- FX nodes → origins -------------------------------------------------------------------

_STACK_LINE = re.compile(r'^\s*File "(?P<file>.+)", line (?P<line>\d+), in (?P<func>.+?)\s*$')
_RESUME = re.compile(r"^torch_dynamo_resume_in_(?P<func>.+)_at_\d+$")
_GETATTR = re.compile(r"getattr\((?P<obj>[^()]+), '(?P<attr>[^']*)'\)")


def original_function(name: str) -> str:
    """``torch_dynamo_resume_in_forward_at_35`` → ``forward``: resumed frames keep the user's name."""
    m = _RESUME.match(name)
    return m.group("func") if m else name


@functools.lru_cache(maxsize=4096)
def parse_stack(stack_trace: str) -> tuple[Frame, ...]:
    """User frames of an FX node's ``stack_trace`` (outermost first)."""
    out: list[Frame] = []
    for text in stack_trace.splitlines():
        m = _STACK_LINE.match(text)
        if m is None:
            continue
        file = m.group("file")
        if not is_user_file(file):
            continue
        out.append(Frame.python(display_path(file), int(m.group("line")), original_function(m.group("func"))))
    return tuple(out)


def module_path(source: str) -> str:
    """Dynamo's module source (``L['self'].blocks[0]._modules['fc']``) → attribute path ``blocks.0.fc``."""
    text = source.strip()
    while True:  # getattr(X, 'a') → X.a, innermost first
        new = _GETATTR.sub(lambda m: f"{m.group('obj')}.{m.group('attr')}", text)
        if new == text:
            break
        text = new
    for prefix in ("L[", "G["):
        if text.startswith(prefix):
            end = text.find("]")
            text = text[end + 1 :] if end >= 0 else ""
            break
    text = re.sub(r"\._modules\['([^']*)'\]", r".\1", text)
    text = re.sub(r"\[['\"]?([^'\"\]]*)['\"]?\]", r".\1", text)
    return text.strip(".")


def _module_frame(stack: Any) -> Frame | None:
    if not stack:
        return None
    try:
        source, cls = list(stack.values())[-1]
    except (AttributeError, TypeError, ValueError):
        return None
    path = module_path(str(source))
    if not path:
        return None  # the compiled module itself: its frame is already the context
    cls_name = cls.__name__ if isinstance(cls, type) else str(cls).rsplit(".", 1)[-1]
    return Frame.module_(path, cls_name)


def op_name(target: Any) -> str:
    """``aten.gelu.default`` (OpOverload or packet) → ``aten::gelu``."""
    text = str(target)
    if text.startswith("torch.ops."):
        text = text[len("torch.ops.") :]
    parts = text.split(".")
    if len(parts) >= 2 and "::" not in text:
        return f"{parts[0]}::{parts[1]}"
    return text


def _tensor_meta(value: Any) -> tuple[list[int], int] | None:
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is None or dtype is None:
        return None
    try:
        dims = [int(s) for s in shape]
    except (TypeError, ValueError):
        return None  # symbolic sizes: no estimate
    return dims, int(getattr(dtype, "itemsize", 4))


def _nbytes(meta: tuple[list[int], int] | None) -> float:
    if meta is None:
        return 0.0
    n = 1
    for d in meta[0]:
        n *= d
    return float(n * meta[1])


def _args(node: Any) -> list[Any]:
    out: list[Any] = []
    for a in getattr(node, "args", ()):
        if isinstance(a, (list, tuple)):
            out.extend(a)
        else:
            out.append(a)
    return out


def node_cost(node: Any) -> tuple[float, float]:
    """(FLOPs, bytes) of one post-grad node from the fake tensors in its meta."""
    target_op = op_name(getattr(node, "target", ""))
    inputs = [_tensor_meta(getattr(a, "meta", {}).get("val")) if hasattr(a, "meta") else None for a in _args(node)]
    outputs = getattr(node, "meta", {}).get("val")
    out_metas = [_tensor_meta(v) for v in outputs] if isinstance(outputs, (list, tuple)) else [_tensor_meta(outputs)]
    flops = op_flops(target_op, [m[0] if m is not None else None for m in inputs]) or 0.0
    if target_op in _VIEW_OPS:
        return float(flops), 0.0
    return float(flops), sum(_nbytes(m) for m in inputs) + sum(_nbytes(m) for m in out_metas)


def origins_of_nodes(nodes: Iterable[Any], backward: bool) -> tuple[FusedOrigin, ...]:
    """One origin per (original op, user stack, module), in first-seen order; costs summed."""
    groups: dict[tuple[str, tuple[Frame, ...], Frame | None], list[Any]] = {}
    for node in nodes:
        meta = getattr(node, "meta", {})
        original = meta.get("original_aten")
        op = op_name(original if original is not None else getattr(node, "target", ""))
        stack = parse_stack(str(meta.get("stack_trace") or ""))
        module = _module_frame(meta.get("fwd_nn_module_stack") if backward else None) or _module_frame(
            meta.get("nn_module_stack")
        )
        if backward and module is None:
            module = _module_frame(meta.get("fwd_nn_module_stack"))
        groups.setdefault((op, stack, module), []).append(node)
    out: list[FusedOrigin] = []
    for (op, stack, module), members in groups.items():
        flops = nbytes = 0.0
        for n in members:
            f, b = node_cost(n)
            flops += f
            nbytes += b
        names = tuple(str(getattr(n, "name", "")) for n in members)
        out.append(FusedOrigin(op, stack, module, backward, flops, nbytes, names))
    return tuple(out)


# --- kernel map → graph record ----------------------------------------------------------------


def extern_op(kernel: str) -> str:
    """Provenance name of an extern/fallback call → the op the profiler shows (``aten::mm``)."""
    for prefix in ("extern_kernels.", "torch.ops."):
        if kernel.startswith(prefix):
            kernel = kernel[len(prefix) :]
    if "." in kernel:
        return op_name(kernel)
    return kernel if "::" in kernel else f"aten::{kernel}"


def is_generated_kernel(name: str) -> bool:
    """Inductor-generated kernels (C++ or Triton), as opposed to extern/fallback ops."""
    return name.startswith(("cpp_fused", "triton_", "cpp_CppMicroGemm", "cpp_bmm", "cpp_mm")) or "_fused_" in name


def graph_record(
    gm: Any,
    kernel_map: dict[str, list[str]],
    *,
    graph_id: int | None,
    backward: bool,
    compile_id: str | None,
    compile_time_s: float,
) -> GraphRecord:
    """Turn Inductor's ``kernel:handle -> [post-grad node names]`` map into a GraphRecord."""
    nodes = {n.name: n for n in gm.graph.nodes}
    calls: list[tuple[int, str, tuple[FusedOrigin, ...]]] = []
    for key, names in kernel_map.items():
        kernel, _, handle = key.rpartition(":")
        if not kernel or not handle.isdigit():
            kernel, handle = key, "0"
        found = [nodes[n] for n in names if n in nodes]
        calls.append((int(handle), kernel, origins_of_nodes(found, backward)))
    calls.sort(key=lambda c: c[0])
    kernels: dict[str, list[tuple[FusedOrigin, ...]]] = {}
    externs: dict[str, list[tuple[FusedOrigin, ...]]] = {}
    for _, kernel, origins in calls:
        if is_generated_kernel(kernel):
            kernels.setdefault(kernel, []).append(origins)
        else:
            op = extern_op(kernel)
            # an extern call's IR node also lists the views/pointwise ops that fed it: keep the op itself
            own = tuple(o for o in origins if o.op == op)
            externs.setdefault(op, []).append(own or origins)
    return GraphRecord(
        graph_id=graph_id,
        backward=backward,
        compile_id=compile_id,
        compile_time_s=compile_time_s,
        kernels={k: tuple(v) for k, v in kernels.items()},
        externs={k: tuple(v) for k, v in externs.items()},
    )


# --- profiled kernel → origins ----------------------------------------------------------------

_PREFIXED = re.compile(r"^graph_(?P<gid>\d+)_(?P<kernel>.+)$")


def split_kernel_name(name: str) -> tuple[int | None, str]:
    """``graph_3_cpp_fused_add_0`` → (3, ``cpp_fused_add_0``); other names → (None, name)."""
    m = _PREFIXED.match(name)
    if m is None:
        return None, name
    return int(m.group("gid")), m.group("kernel")


@dataclass
class GraphTable:
    """The graphs compiled so far, in compile order, and the lookup of a profiled kernel's origins."""

    graphs: list[GraphRecord] = field(default_factory=list)
    _index: dict[tuple[int, bool], GraphRecord] = field(default_factory=dict)

    def add(self, record: GraphRecord) -> None:
        self.graphs.append(record)
        if record.graph_id is not None:
            self._index[(record.graph_id, record.backward)] = record

    def graph_for(
        self, graph_id: int | None = None, backward: bool = False, compile_id: str | None = None
    ) -> GraphRecord | None:
        if graph_id is not None:
            return self._index.get((graph_id, backward))
        if compile_id is not None:
            for g in reversed(self.graphs):
                if g.compile_id == compile_id and g.backward == backward:
                    return g
        return None

    def origins(
        self,
        kernel_name: str,
        backward: bool,
        call_index: int = 0,
        *,
        graph_id: int | None = None,
        compile_id: str | None = None,
    ) -> list[FusedOrigin] | None:
        """What the ``call_index``-th call of ``kernel_name`` in one graph invocation fused.

        ``kernel_name`` is the profiler's op name: ``graph_0_cpp_fused_add_gelu_0`` (the graph id is
        in the name), a Triton kernel name, or an extern op (``aten::mm``) called from the graph's
        wrapper. ``call_index`` counts earlier calls of the same name within the same
        ``## Call CompiledFxGraph ##`` invocation: Inductor reuses one kernel for identical code, and
        each call has its own provenance. For names without a graph id give ``graph_id`` or the
        ``compile_id`` of the enclosing ``Torch-Compiled Region: F/C``. None: unknown kernel.
        """
        gid, kernel = split_kernel_name(kernel_name)
        if gid is None:
            gid = graph_id
        graph = self.graph_for(gid, backward, compile_id)
        if graph is None and gid is None and compile_id is None:
            # Triton kernels carry no graph id: unique across graphs, or unknown
            found = [g for g in self.graphs if g.backward == backward and kernel in g.kernels]
            graph = found[0] if len(found) == 1 else None
        if graph is None:
            return None
        calls = graph.kernels.get(kernel)
        if calls is None:
            calls = graph.externs.get(kernel)
            if calls is None or call_index >= len(calls):
                return None  # an extern op is only known for as many calls as the graph makes
        if not calls:
            return None
        origins = calls[call_index % len(calls)]
        return list(origins) if origins else None
