"""The private torch APIs that compile provenance touches: version check, probing, and accessors.

Everything private in torch that kernelscope uses is named in this module. :func:`probe` checks each
attribute before it is used and never raises; a missing API makes the capture record one warning
and degrade to name-based grouping. The small accessors below are the only places that read or
write those attributes; :mod:`.capture` goes through them.
"""

from __future__ import annotations

import collections
import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

# versions whose private APIs this package was tested against (docs/run.md's table; 2.5 lacks provenance)
TESTED_TORCH = ((2, 13), (2, 15))


@dataclass(frozen=True)
class Api:
    """The private torch objects compile provenance uses, found by :func:`probe`."""

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


def tested_versions() -> str:
    return ", ".join(f"{a}.{b}" for a, b in TESTED_TORCH)


def torch_version_tested(version: str) -> bool:
    parts = version.split("+")[0].split(".")
    try:
        major, minor = int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return False
    return (major, minor) in TESTED_TORCH


# --- config ------------------------------------------------------------------------------------


@dataclass
class Saved:
    """What :func:`install` replaced, for :func:`restore`."""

    provenance_level: Any = None
    kernel_profile: Any = None
    fx_graph_cache: Any = None
    eager_backward: Any = None
    autograd_cache: Any = None
    inner: Any = None
    log_graph_break: Any = None
    recompile_reasons: Any = None
    metrics_deque: Any = None


def set_config(api: Api, saved: Saved, *, disable_caches: bool) -> None:
    """Provenance tracking and the C++ kernel profile on; the FX-graph and AOTAutograd caches off."""
    ic, fc = api.inductor_config, api.functorch_config
    saved.provenance_level = ic.trace.provenance_tracking_level
    saved.kernel_profile = ic.cpp.enable_kernel_profile
    ic.trace.provenance_tracking_level = 1
    ic.cpp.enable_kernel_profile = True
    if disable_caches:
        saved.fx_graph_cache, saved.autograd_cache = ic.fx_graph_cache, fc.enable_autograd_cache
        saved.eager_backward = getattr(fc, "force_non_lazy_backward_lowering", None)
        ic.fx_graph_cache = False
        fc.enable_autograd_cache = False
        # with its cache on, AOTAutograd compiles the backward graph with the forward; off, it would compile
        # it lazily, inside backward(), where the profiler cannot stop: keep it where the program has it
        if saved.eager_backward is not None:
            fc.force_non_lazy_backward_lowering = bool(saved.autograd_cache) or saved.eager_backward


def restore_config(api: Api, saved: Saved, *, disable_caches: bool) -> None:
    ic, fc = api.inductor_config, api.functorch_config
    ic.trace.provenance_tracking_level = saved.provenance_level
    ic.cpp.enable_kernel_profile = saved.kernel_profile
    if disable_caches:
        ic.fx_graph_cache = saved.fx_graph_cache
        fc.enable_autograd_cache = saved.autograd_cache
        if saved.eager_backward is not None:
            fc.force_non_lazy_backward_lowering = saved.eager_backward


# --- hooks ----------------------------------------------------------------------------------------


def compile_fx_inner(api: Api) -> Any:
    return api.compile_fx._compile_fx_inner


def set_compile_fx_inner(api: Api, fn: Any) -> None:
    api.compile_fx._compile_fx_inner = fn


def log_graph_break(api: Api) -> Any:
    assert api.instruction_translator is not None
    return api.instruction_translator.log_graph_break


def set_log_graph_break(api: Api, fn: Any) -> None:
    assert api.instruction_translator is not None
    api.instruction_translator.log_graph_break = fn


def recompile_reasons(api: Api) -> Any:
    assert api.convert_frame is not None
    return api.convert_frame.get_and_maybe_log_recompilation_reasons


def set_recompile_reasons(api: Api, fn: Any) -> None:
    assert api.convert_frame is not None
    api.convert_frame.get_and_maybe_log_recompilation_reasons = fn


# --- Dynamo's compilation callbacks ----------------------------------------------------------


def add_start_callback(fn: Any) -> Any:
    """Call ``fn(args)`` (``args.compile_id``) as Dynamo starts compiling a frame; returns what to remove."""
    from torch._dynamo.callback import callback_handler

    def started(args: Any) -> None:
        fn(args)

    callback_handler.register_start_callback(started)
    return started


def remove_start_callback(cb: Any) -> None:
    from torch._dynamo.callback import callback_handler

    with contextlib.suppress(ValueError):
        callback_handler.remove_start_callback(cb)


# --- compilation metrics ----------------------------------------------------------------------


def has_metrics_deque(api: Api) -> bool:
    return api.dynamo_utils is not None and hasattr(api.dynamo_utils, "_compilation_metrics")


def widen_metrics(api: Api) -> Any:
    """Swap Dynamo's bounded metrics deque for a roomier copy; returns the original."""
    assert api.dynamo_utils is not None
    original = api.dynamo_utils._compilation_metrics
    api.dynamo_utils._compilation_metrics = collections.deque(original, maxlen=100_000)
    return original


def restore_metrics(api: Api, original: Any) -> list[Any]:
    """Put back the original deque, with what was recorded meanwhile; returns everything recorded."""
    assert api.dynamo_utils is not None
    ours = api.dynamo_utils._compilation_metrics
    original.extend(m for m in ours if m not in original)
    api.dynamo_utils._compilation_metrics = original
    return list(ours)


def compilation_metrics(api: Api) -> list[Any]:
    assert api.dynamo_utils is not None
    return list(api.dynamo_utils.get_compilation_metrics())


# --- during a compile -------------------------------------------------------------------------


@contextlib.contextmanager
def reset_provenance(api: Api) -> Iterator[None]:
    """Fresh provenance globals for one inner compile (Inductor resets them per forward compile only)."""
    with api.debug.reset_provenance_globals():
        yield


def kernel_node_map(api: Api) -> dict[str, list[str]]:
    """Inductor's ``kernel:handle -> [post-grad node names]`` of the compile just done."""
    return {k: list(v) for k, v in api.debug._inductor_triton_kernel_to_post_grad_node_info.items()}


def current_compile_id(api: Api) -> Any:
    return api.compile_context.current_compile_id()


def tracing_stack(api: Api) -> Any:
    """The user stack Dynamo is tracing (for a graph break whose exception carries none)."""
    return api.torch._guards.TracingContext.extract_stack()
