"""torch.compile provenance: which original ops, modules and user lines each Inductor kernel fused.

Everything private in torch that kernelscope touches lives in this one module, behind
:func:`probe`, which checks each attribute before it is used. A missing API never
crashes a run: :class:`CompileCapture` records one warning and degrades to name-based
grouping (``origins`` returns ``None`` and the collector keeps the kernel by name).

What it does while active (FIELD-NOTES, torch 2.13):

- turns on Inductor's provenance tracking (``trace.provenance_tracking_level = 1``) and the C++
  kernel profile (``cpp.enable_kernel_profile``: each ``cpp_fused_*`` kernel becomes a
  ``graph_<id>_<kernel>`` profiler op);
- **disables the AOTAutograd and FX-graph caches** (in this process only, restored on exit): a
  cache hit skips inner compilation, so the kernel→node map would be empty. The on-disk caches are
  neither read nor written while profiling; the C++ build cache stays on, so a warm second run
  still skips the C++ compiler. A second run therefore gives exactly the same attribution;
- wraps Inductor's inner compile (``compile_fx._compile_fx_inner``) to copy, for every forward and
  backward graph, the kernel→post-grad-node map and the nodes' metadata right after codegen;
- wraps Dynamo's graph-break logger and recompile-reason check to keep each break's reason and
  user line and each recompile's guard and call line; reads Dynamo's compilation metrics for
  compile times.
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..build.costs import op_flops
from ..model import Frame
from .userframes import display_path, is_user_file

SCHEMA = 1
TESTED_TORCH = ((2, 13),)  # versions whose private APIs this module was written against

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
class FusedOrigin:
    """One original op (one or more post-grad FX nodes) inside an Inductor kernel."""

    op: str  # original aten op, "aten::mm"
    stack: tuple[Frame, ...]  # user python frames, outermost → innermost
    module: Frame | None  # innermost module frame (attribute path, class)
    backward: bool  # node of a backward graph (stack points at the forward line)
    flops: float  # from node shapes (matmul/conv/...), 0 otherwise
    bytes: float  # tensor bytes read + written by the node(s), from meta shapes/dtypes
    nodes: tuple[str, ...] = ()  # post-grad node names (debugging)


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


@dataclass(frozen=True)
class GraphBreak:
    reason: str
    type: str
    file: str
    line: int
    function: str
    compile_id: str | None


@dataclass(frozen=True)
class Recompile:
    reason: str  # first guard failure
    kind: str  # shape | dtype | value | type | identity | other
    guard_file: str  # where the guarded value is used (from the guard's user stack)
    guard_line: int
    function: str  # the recompiled function
    def_file: str
    def_line: int
    file: str  # the user's call that triggered it
    line: int
    compile_id: str | None


# --- private API access --------------------------------------------------------------------


@dataclass(frozen=True)
class Api:
    """The private torch objects this module uses, found by :func:`probe`."""

    torch: Any
    inductor_config: Any
    functorch_config: Any
    compile_fx: Any  # module torch._inductor.compile_fx
    debug: Any  # module torch._inductor.debug
    compile_context: Any  # torch._guards.CompileContext
    instruction_translator: Any | None  # for graph breaks
    convert_frame: Any | None  # for recompiles
    dynamo_utils: Any | None  # compilation metrics


def probe() -> tuple[Api | None, list[str]]:
    """The private APIs, or None and what is missing (never raises)."""
    missing: list[str] = []
    try:
        import torch
        import torch._dynamo.utils as dynamo_utils
        import torch._functorch.config as functorch_config
        import torch._guards as guards
        import torch._inductor.compile_fx as compile_fx
        import torch._inductor.config as inductor_config
        import torch._inductor.debug as debug
    except Exception as exc:  # ImportError, or anything a broken install raises
        return None, [f"torch internals ({exc.__class__.__name__}: {exc})"]

    def need(obj: Any, attr: str, label: str) -> None:
        if not hasattr(obj, attr):
            missing.append(label)

    need(inductor_config, "trace", "torch._inductor.config.trace")
    if hasattr(inductor_config, "trace"):
        need(
            inductor_config.trace, "provenance_tracking_level", "torch._inductor.config.trace.provenance_tracking_level"
        )
    need(inductor_config, "cpp", "torch._inductor.config.cpp")
    if hasattr(inductor_config, "cpp"):
        need(inductor_config.cpp, "enable_kernel_profile", "torch._inductor.config.cpp.enable_kernel_profile")
    need(inductor_config, "fx_graph_cache", "torch._inductor.config.fx_graph_cache")
    need(functorch_config, "enable_autograd_cache", "torch._functorch.config.enable_autograd_cache")
    need(compile_fx, "_compile_fx_inner", "torch._inductor.compile_fx._compile_fx_inner")
    need(
        debug,
        "_inductor_triton_kernel_to_post_grad_node_info",
        "torch._inductor.debug._inductor_triton_kernel_to_post_grad_node_info",
    )
    need(debug, "reset_provenance_globals", "torch._inductor.debug.reset_provenance_globals")
    need(guards, "CompileContext", "torch._guards.CompileContext")
    if missing:
        return None, missing

    translator: Any | None = None
    try:
        from torch._dynamo.symbolic_convert import InstructionTranslatorBase

        if callable(getattr(InstructionTranslatorBase, "log_graph_break", None)):
            translator = InstructionTranslatorBase
    except Exception:
        translator = None
    convert: Any | None = None
    try:
        import torch._dynamo.convert_frame as convert_frame

        if callable(getattr(convert_frame, "get_and_maybe_log_recompilation_reasons", None)):
            convert = convert_frame
    except Exception:
        convert = None
    utils: Any | None = dynamo_utils if callable(getattr(dynamo_utils, "get_compilation_metrics", None)) else None
    api = Api(
        torch=torch,
        inductor_config=inductor_config,
        functorch_config=functorch_config,
        compile_fx=compile_fx,
        debug=debug,
        compile_context=guards.CompileContext,
        instruction_translator=translator,
        convert_frame=convert,
        dynamo_utils=utils,
    )
    return api, []


def torch_version_tested(version: str) -> bool:
    parts = version.split("+")[0].split(".")
    try:
        major, minor = int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return False
    return (major, minor) in TESTED_TORCH


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


_PREFIXED = re.compile(r"^graph_(?P<gid>\d+)_(?P<kernel>.+)$")


def split_kernel_name(name: str) -> tuple[int | None, str]:
    """``graph_3_cpp_fused_add_0`` → (3, ``cpp_fused_add_0``); other names → (None, name)."""
    m = _PREFIXED.match(name)
    if m is None:
        return None, name
    return int(m.group("gid")), m.group("kernel")


def guard_kind(reason: str) -> str:
    text = reason.lower()
    if "size mismatch" in text or "stride mismatch" in text or "dim()" in text or ".size()" in text:
        return "shape"
    if "dtype" in text:
        return "dtype"
    if "device" in text:
        return "device"
    if "type(" in text or "check_type_id" in text or "type mismatch" in text:
        return "type"
    if "id(" in text or "check_obj_id" in text:
        return "identity"
    if "==" in text or "!=" in text:
        return "value"
    return "other"


# --- the capture -----------------------------------------------------------------------------


@dataclass
class _Saved:
    provenance_level: Any = None
    kernel_profile: Any = None
    fx_graph_cache: Any = None
    autograd_cache: Any = None
    inner: Any = None
    log_graph_break: Any = None
    recompile_reasons: Any = None
    metrics_deque: Any = None


@dataclass
class CompileCapture:
    """Active for a whole profiled run; see the module docstring."""

    disable_caches: bool = True
    warnings: list[str] = field(default_factory=list)
    graphs: list[GraphRecord] = field(default_factory=list)
    graph_breaks: list[GraphBreak] = field(default_factory=list)
    recompiles: list[Recompile] = field(default_factory=list)
    runtime: dict[str, float] = field(default_factory=dict)
    _api: Api | None = None
    _saved: _Saved = field(default_factory=_Saved)
    _active: bool = False
    _start_us: int = 0
    _index: dict[tuple[int, bool], GraphRecord] = field(default_factory=dict)
    _metrics_snapshot: list[Any] | None = None

    # --- lifecycle ------------------------------------------------------------------
    def __enter__(self) -> CompileCapture:
        api, missing = probe()
        if api is None:
            self.warn(
                "torch.compile provenance is unavailable in this torch version (missing: "
                + ", ".join(missing)
                + "); compiled kernels are grouped by name only"
            )
            return self
        self._api = api
        if not torch_version_tested(str(api.torch.__version__)):
            self.warn(
                f"torch {api.torch.__version__} is not a version kernelscope's compile provenance was tested with "
                "(2.13); attribution of compiled kernels may be incomplete"
            )
        s = self._saved
        ic, fc = api.inductor_config, api.functorch_config
        s.provenance_level = ic.trace.provenance_tracking_level
        s.kernel_profile = ic.cpp.enable_kernel_profile
        ic.trace.provenance_tracking_level = 1
        ic.cpp.enable_kernel_profile = True
        if self.disable_caches:
            s.fx_graph_cache, s.autograd_cache = ic.fx_graph_cache, fc.enable_autograd_cache
            ic.fx_graph_cache = False
            fc.enable_autograd_cache = False
        s.inner = api.compile_fx._compile_fx_inner
        api.compile_fx._compile_fx_inner = self._wrap_inner(s.inner)
        if api.instruction_translator is not None:
            s.log_graph_break = api.instruction_translator.log_graph_break
            api.instruction_translator.log_graph_break = self._wrap_graph_break(s.log_graph_break)
        else:
            self.warn("graph-break reasons are unavailable in this torch version")
        if api.convert_frame is not None:
            s.recompile_reasons = api.convert_frame.get_and_maybe_log_recompilation_reasons
            api.convert_frame.get_and_maybe_log_recompilation_reasons = self._wrap_recompile(s.recompile_reasons)
        else:
            self.warn("recompile reasons are unavailable in this torch version")
        if api.dynamo_utils is not None and hasattr(api.dynamo_utils, "_compilation_metrics"):
            import collections

            s.metrics_deque = api.dynamo_utils._compilation_metrics
            api.dynamo_utils._compilation_metrics = collections.deque(s.metrics_deque, maxlen=100_000)
        self._start_us = time.time_ns() // 1000
        self._active = True
        return self

    def __exit__(self, *exc: object) -> None:
        api, s = self._api, self._saved
        if api is None or not self._active:
            return
        self._active = False
        ic, fc = api.inductor_config, api.functorch_config
        ic.trace.provenance_tracking_level = s.provenance_level
        ic.cpp.enable_kernel_profile = s.kernel_profile
        if self.disable_caches:
            ic.fx_graph_cache = s.fx_graph_cache
            fc.enable_autograd_cache = s.autograd_cache
        api.compile_fx._compile_fx_inner = s.inner
        if s.log_graph_break is not None and api.instruction_translator is not None:
            api.instruction_translator.log_graph_break = s.log_graph_break
        if s.recompile_reasons is not None and api.convert_frame is not None:
            api.convert_frame.get_and_maybe_log_recompilation_reasons = s.recompile_reasons
        if s.metrics_deque is not None and api.dynamo_utils is not None:
            ours = api.dynamo_utils._compilation_metrics
            s.metrics_deque.extend(m for m in ours if m not in s.metrics_deque)
            self._metrics_snapshot = list(ours)
            api.dynamo_utils._compilation_metrics = s.metrics_deque

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    # --- hooks ---------------------------------------------------------------------
    def _compile_id(self) -> str | None:
        try:
            cid = self._api.compile_context.current_compile_id() if self._api is not None else None
        except Exception:
            return None
        return None if cid is None else str(cid)

    def _wrap_inner(self, inner: Callable[..., Any]) -> Callable[..., Any]:
        capture = self

        @functools.wraps(inner)
        def kernelscope_compile_fx_inner(gm: Any, example_inputs: Any, *args: Any, **kwargs: Any) -> Any:
            api = capture._api
            if api is None or not capture._active:
                return inner(gm, example_inputs, *args, **kwargs)
            start = time.perf_counter()
            with _reset_provenance(api):
                out = inner(gm, example_inputs, *args, **kwargs)
                kernel_map = {k: list(v) for k, v in api.debug._inductor_triton_kernel_to_post_grad_node_info.items()}
            elapsed = time.perf_counter() - start
            try:
                record = graph_record(
                    gm,
                    kernel_map,
                    graph_id=kwargs.get("graph_id"),
                    backward=bool(kwargs.get("is_backward", False)),
                    compile_id=capture._compile_id(),
                    compile_time_s=elapsed,
                )
            except Exception as exc:  # provenance is a debugging aid: never break the compile
                capture.warn(f"could not read Inductor provenance ({exc.__class__.__name__}: {exc})")
                return out
            capture._add_graph(record)
            return out

        return kernelscope_compile_fx_inner

    def _wrap_graph_break(self, original: Callable[..., Any]) -> Callable[..., Any]:
        capture = self

        @functools.wraps(original)
        def kernelscope_log_graph_break(translator: Any, code_options: Any, reason: str, exc: Any) -> Any:
            if capture._active and not getattr(exc, "logged", False):
                with contextlib.suppress(Exception):
                    capture._record_break(reason, exc)
            return original(translator, code_options, reason, exc)

        return kernelscope_log_graph_break

    def _wrap_recompile(self, original: Callable[..., Any]) -> Callable[..., Any]:
        capture = self

        @functools.wraps(original)
        def kernelscope_recompile_reasons(cache_entries: Any, frame: Any, *args: Any, **kwargs: Any) -> Any:
            reasons = original(cache_entries, frame, *args, **kwargs)
            if capture._active and not kwargs.get("skip_logging", False):
                with contextlib.suppress(Exception):
                    capture._record_recompile(list(reasons), frame)
            return reasons

        return kernelscope_recompile_reasons

    def _record_break(self, reason: str, exc: Any) -> None:
        api = self._api
        stack = getattr(exc, "real_stack", None)
        if stack is None and api is not None:
            stack = api.torch._guards.TracingContext.extract_stack()
        user = [f for f in (stack or []) if is_user_file(f.filename)]
        where = user[-1] if user else None
        gb_type = getattr(exc, "gb_type", None) or type(exc).__name__
        text = break_reason(str(gb_type), str(getattr(exc, "msg", "") or reason))
        self.graph_breaks.append(
            GraphBreak(
                reason=text,
                type=str(gb_type),
                file=display_path(where.filename) if where else "",
                line=int(where.lineno or 0) if where else 0,
                function=original_function(where.name) if where else "",
                compile_id=self._compile_id(),
            )
        )

    def _record_recompile(self, reasons: list[str], frame: Any) -> None:
        code = frame.f_code
        full = str(reasons[0]) if reasons else ""
        reason = guard_text(full) if full else "unknown (Dynamo found no failing guard)"
        used = parse_stack(full)
        file, line = _user_call_site(code)
        self.recompiles.append(
            Recompile(
                reason=reason,
                guard_file=used[-1].file if used else "",
                guard_line=used[-1].line if used else 0,
                kind=guard_kind(reason),
                function=original_function(code.co_name),
                def_file=display_path(code.co_filename),
                def_line=int(code.co_firstlineno),
                file=file,
                line=line,
                compile_id=self._compile_id(),
            )
        )

    def _add_graph(self, record: GraphRecord) -> None:
        self.graphs.append(record)
        if record.graph_id is not None:
            self._index[(record.graph_id, record.backward)] = record

    # --- queries -----------------------------------------------------------------------
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

    def observe_events(self, roots: Iterable[Any]) -> None:
        """Steady-state time in compiled graphs vs. outside them, from the profiler's event tree.

        ``roots``: ``experimental_event_tree()`` (objects with ``name``, ``children``,
        ``duration_time_ns``). Accumulates over calls (one per profiling window).
        """
        try:
            totals = compiled_runtime(roots)
        except Exception as exc:  # a debugging aid: never fail the user's run
            self.warn(f"could not measure time in compiled graphs ({exc.__class__.__name__}: {exc})")
            return
        for key, value in totals.items():
            self.runtime[key] = self.runtime.get(key, 0.0) + value

    def diagnostics(self) -> dict[str, Any]:
        """JSON-able compile diagnostics for ``profile.metadata["compile"]``."""
        api = self._api
        compiles = self._compiles()
        out: dict[str, Any] = {
            "schema": SCHEMA,
            "provenance": api is not None,
            "caches": {
                "fx_graph_cache": "disabled while profiling" if self.disable_caches else "unchanged",
                "autograd_cache": "disabled while profiling" if self.disable_caches else "unchanged",
                "note": "cache hits skip Inductor's codegen and hide provenance; the C++ build cache stays on",
            },
            "warnings": list(self.warnings),
            "graph_breaks": _count_breaks(self.graph_breaks),
            "recompiles": [
                {
                    "reason": r.reason,
                    "guard": r.kind,
                    "guard_file": r.guard_file,
                    "guard_line": r.guard_line,
                    "function": r.function,
                    "def_file": r.def_file,
                    "def_line": r.def_line,
                    "file": r.file,
                    "line": r.line,
                    "compile_id": r.compile_id,
                }
                for r in self.recompiles
            ],
            "compiles": compiles,
            "frames": _frames(compiles, self.graph_breaks),
            "graphs": [
                {
                    "graph_id": g.graph_id,
                    "backward": g.backward,
                    "compile_id": g.compile_id,
                    "compile_time_s": round(g.compile_time_s, 6),
                    "kernels": len(g.kernels),
                    "kernel_calls": sum(len(c) for c in g.kernels.values()),
                    "extern_calls": sum(len(c) for c in g.externs.values()),
                }
                for g in self.graphs
            ],
        }
        if self.runtime:
            out["runtime"] = dict(self.runtime)
        doc: dict[str, Any] = json.loads(json.dumps(out, default=str))
        return doc

    def _compiles(self) -> list[dict[str, Any]]:
        api = self._api
        if api is None or api.dynamo_utils is None:
            return []
        metrics = self._metrics_snapshot
        if metrics is None:
            try:
                metrics = list(api.dynamo_utils.get_compilation_metrics())
            except Exception:
                return []
        out: list[dict[str, Any]] = []
        for m in metrics:
            start = getattr(m, "start_time_us", None) or 0
            if start and start < self._start_us:
                continue
            name = getattr(m, "co_name", None)
            if name is None:
                continue  # backward-only records carry no frame
            out.append(
                {
                    "compile_id": _str_or_none(getattr(m, "compile_id", None)),
                    "function": original_function(str(name)),
                    "code_name": str(name),
                    "file": display_path(str(getattr(m, "co_filename", "") or "")),
                    "line": int(getattr(m, "co_firstlineno", 0) or 0),
                    "compile_time_s": _float(getattr(m, "entire_frame_compile_time_s", None)),
                    "backend_time_s": _float(getattr(m, "backend_compile_time_s", None)),
                    "inductor_time_s": _float(getattr(m, "inductor_compile_time_s", None)),
                    "graph_ops": int(getattr(m, "graph_op_count", 0) or 0),
                    "recompile_reason": getattr(m, "recompile_reason", None),
                    "failed": getattr(m, "fail_type", None),
                }
            )
        return out


@contextlib.contextmanager
def _reset_provenance(api: Api) -> Iterator[None]:
    """Fresh provenance globals for one inner compile (Inductor resets them per forward compile only)."""
    with api.debug.reset_provenance_globals():
        yield


def _first_line(text: str) -> str:
    text = str(text).strip()
    return text.splitlines()[0].strip() if text else ""


def break_reason(gb_type: str, message: str) -> str:
    """``Failed to trace builtin operator: Dynamo does not know how to trace builtin operator `print` ...``."""
    for text in message.splitlines():
        text = text.strip()
        if text.startswith("Explanation:"):
            return f"{gb_type}: {text[len('Explanation:') :].strip()}"
    return gb_type or _first_line(message)


def guard_text(reason: str) -> str:
    """``1/0: scale == 0.5   # x = f(x) * scale  # a.py:16 in fn`` → ``scale == 0.5``."""
    text = _first_line(reason)
    head, sep, rest = text.partition(": ")
    if sep and "/" in head and head.replace("/", "").isdigit():
        text = rest
    return text.split("  #", 1)[0].strip()


def _user_call_site(code: Any) -> tuple[str, int]:
    """The user's line whose call made Dynamo recompile ``code``.

    Innermost first, the stack is: kernelscope/Dynamo frames, then (for a resumed frame) the
    user function that was split by a graph break, then torch's call wrappers, then the call.
    """
    split_fn = (
        (code.co_filename, original_function(code.co_name)) if code.co_name != original_function(code.co_name) else None
    )
    frame: Any = sys._getframe(1)
    seen_library = False
    while frame is not None:
        f_code = frame.f_code
        if is_user_file(f_code.co_filename):
            if split_fn is not None and (f_code.co_filename, f_code.co_name) == split_fn:
                split_fn, seen_library = None, False  # skip the function the graph break split
            elif seen_library:
                return display_path(f_code.co_filename), int(frame.f_lineno or 0)
        else:
            seen_library = True
        frame = frame.f_back
    return "", 0


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def _float(value: Any) -> float | None:
    return None if value is None else round(float(value), 6)


def _count_breaks(breaks: Sequence[GraphBreak]) -> list[dict[str, Any]]:
    counted: dict[tuple[str, str, int], dict[str, Any]] = {}
    for gb in breaks:
        key = (gb.reason, gb.file, gb.line)
        entry = counted.get(key)
        if entry is None:
            counted[key] = {
                "reason": gb.reason,
                "type": gb.type,
                "file": gb.file,
                "line": gb.line,
                "function": gb.function,
                "compile_id": gb.compile_id,
                "count": 1,
            }
        else:
            entry["count"] += 1
    return list(counted.values())


def _frames(compiles: Sequence[dict[str, Any]], breaks: Sequence[GraphBreak]) -> list[dict[str, Any]]:
    """Per user function: graphs (the function and its resumed parts), compiles (recompiles too), time."""
    frames: dict[tuple[str, str], dict[str, Any]] = {}
    codes: dict[tuple[str, str], set[str]] = {}
    for c in compiles:
        key = (c["file"], c["function"])
        entry = frames.setdefault(
            key,
            {
                "function": c["function"],
                "file": c["file"],
                "line": c["line"],
                "graphs": 0,
                "compiles": 0,
                "compile_time_s": 0.0,
            },
        )
        entry["compiles"] += 1
        if c["graph_ops"]:
            codes.setdefault(key, set()).add(c["code_name"])
        if c["code_name"] == c["function"]:
            entry["line"] = c["line"]
        entry["compile_time_s"] = round(entry["compile_time_s"] + (c["compile_time_s"] or 0.0), 6)
    for key, entry in frames.items():
        entry["graphs"] = len(codes.get(key, ()))
        entry["graph_breaks"] = len(
            {(b.file, b.line) for b in breaks if b.file == entry["file"] and b.function == entry["function"]}
        )
    return list(frames.values())


# --- runtime share --------------------------------------------------------------------------

_ENTRY_PREFIXES = ("nn.Module: OptimizedModule",)
_REGION = "Torch-Compiled Region"
_GRAPH_CALL = "## Call CompiledFxGraph"


def compiled_runtime(roots: Iterable[Any]) -> dict[str, float]:
    """Time inside compiled graphs and around them, from an event tree (duck-typed).

    ``entry_ns``: time inside torch.compile'd callables (``OptimizedModule`` calls, or top-level
    ``Torch-Compiled Region`` events when the Python tracer was off), forward only;
    ``graph_ns``: time inside ``## Call CompiledFxGraph`` (forward and backward), of which
    ``backward_graph_ns`` in backward; ``eager_island_ns``: framework ops inside an entry but
    outside every region (what graph breaks leave to eager mode); ``backward_ns``: time inside
    compiled backward calls (``CompiledFunctionBackward``); ``entries``: how many calls.
    """
    totals = dict.fromkeys(
        ("entry_ns", "graph_ns", "backward_graph_ns", "eager_island_ns", "backward_ns", "entries"), 0.0
    )
    # (event, inside an entry, inside a region, inside a compiled backward)
    stack: list[tuple[Any, bool, bool, bool]] = [(r, False, False, False) for r in roots]
    while stack:
        ev, in_entry, in_region, in_bwd = stack.pop()
        try:
            name = str(getattr(ev, "name", ""))
        except UnicodeDecodeError:  # torch 2.13: names of Python frames freed while profiling
            name = ""
        dur = float(getattr(ev, "duration_time_ns", 0) or 0)
        tag = getattr(getattr(ev, "tag", None), "name", "TorchOp")
        children = list(getattr(ev, "children", ()) or ())
        if name.startswith(_GRAPH_CALL):
            totals["graph_ns"] += dur
            if in_bwd:
                totals["backward_graph_ns"] += dur
            continue
        if name == "CompiledFunctionBackward" and not in_bwd:
            totals["backward_ns"] += dur
            stack.extend((c, in_entry, True, True) for c in children)
            continue
        is_entry = name.startswith(_ENTRY_PREFIXES) or (name.startswith(_REGION) and not in_entry)
        if is_entry and not in_entry:
            totals["entry_ns"] += dur
            totals["entries"] += 1
            in_entry = True
        if name.startswith(_REGION):
            in_region = True
        elif in_entry and not in_region and tag == "TorchOp":
            # an eager op between regions: its own time counts (not its children's again)
            totals["eager_island_ns"] += dur
            continue
        stack.extend((c, in_entry, in_region, in_bwd) for c in children)
    return totals


__all__ = [
    "CompileCapture",
    "FusedOrigin",
    "GraphBreak",
    "GraphRecord",
    "Recompile",
    "compiled_runtime",
    "module_path",
    "parse_stack",
    "probe",
    "split_kernel_name",
]
