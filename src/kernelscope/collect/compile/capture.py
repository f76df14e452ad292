"""CompileCapture: installs kernelscope's hooks and config into Inductor/Dynamo for a profiled run.

A missing private API never crashes a run: :func:`.api.probe` reports it, the capture records one
warning and degrades to name-based grouping (``origins`` returns ``None`` and the collector keeps
the kernel by name).

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

What the hooks record is turned into values by :mod:`.provenance` and :mod:`.diagnostics`.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ...attribute.compiled import FusedOrigin
from . import api as private
from .api import Api, Saved, probe, tested_versions, torch_version_tested
from .diagnostics import (
    GraphBreak,
    Recompile,
    compiles_from_metrics,
    diagnostics_doc,
    graph_break,
    recompile,
    user_call_site,
)
from .provenance import GraphRecord, GraphTable, graph_record
from .runtime import compiled_runtime
from .sites import CompileSites, call_site


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
    _saved: Saved = field(default_factory=Saved)
    _active: bool = False
    _start_us: int = 0
    _table: GraphTable = field(init=False, repr=False)
    _metrics_snapshot: list[Any] | None = None
    _sites: CompileSites = field(default_factory=CompileSites)
    _calls: dict[str, tuple[str, int]] = field(default_factory=dict)  # compile id -> the line whose call compiled
    _start_callback: Any = None

    def __post_init__(self) -> None:
        self._table = GraphTable(self.graphs)  # shares the list: ``graphs`` stays the record of compiles

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
                f"({tested_versions()}); attribution of compiled kernels may be incomplete"
            )
        s = self._saved
        private.set_config(api, s, disable_caches=self.disable_caches)
        s.inner = private.compile_fx_inner(api)
        private.set_compile_fx_inner(api, self._wrap_inner(s.inner))
        if api.instruction_translator is not None:
            s.log_graph_break = private.log_graph_break(api)
            private.set_log_graph_break(api, self._wrap_graph_break(s.log_graph_break))
        else:
            self.warn("graph-break reasons are unavailable in this torch version")
        if api.convert_frame is not None:
            s.recompile_reasons = private.recompile_reasons(api)
            private.set_recompile_reasons(api, self._wrap_recompile(s.recompile_reasons))
        else:
            self.warn("recompile reasons are unavailable in this torch version")
        if private.has_metrics_deque(api):
            s.metrics_deque = private.widen_metrics(api)
        with contextlib.suppress(Exception):  # naming aids: never fail the run
            self._sites.install(api.torch)
            self._start_callback = private.add_start_callback(self._compile_started)
        self._start_us = time.time_ns() // 1000
        self._active = True
        return self

    def __exit__(self, *exc: object) -> None:
        api, s = self._api, self._saved
        if api is None or not self._active:
            return
        self._active = False
        private.restore_config(api, s, disable_caches=self.disable_caches)
        private.set_compile_fx_inner(api, s.inner)
        if s.log_graph_break is not None and api.instruction_translator is not None:
            private.set_log_graph_break(api, s.log_graph_break)
        if s.recompile_reasons is not None and api.convert_frame is not None:
            private.set_recompile_reasons(api, s.recompile_reasons)
        if s.metrics_deque is not None and api.dynamo_utils is not None:
            self._metrics_snapshot = private.restore_metrics(api, s.metrics_deque)
        self._sites.remove()
        if self._start_callback is not None:
            private.remove_start_callback(self._start_callback)
            self._start_callback = None

    def _compile_started(self, args: Any) -> None:
        """Dynamo starts compiling a frame: the user line whose call compiled it (on the stack now)."""
        cid = getattr(args, "compile_id", None)
        if cid is not None and str(cid) not in self._calls:
            with contextlib.suppress(Exception):
                self._calls[str(cid)] = call_site()

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    # --- hooks ---------------------------------------------------------------------
    def _compile_id(self) -> str | None:
        try:
            cid = private.current_compile_id(self._api) if self._api is not None else None
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
            with private.reset_provenance(api):
                out = inner(gm, example_inputs, *args, **kwargs)
                kernel_map = private.kernel_node_map(api)
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
            capture._table.add(record)
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
        stack = getattr(exc, "real_stack", None)
        if stack is None and self._api is not None:
            stack = private.tracing_stack(self._api)
        self.graph_breaks.append(graph_break(reason, exc, stack, self._compile_id()))

    def _record_recompile(self, reasons: list[str], frame: Any) -> None:
        code = frame.f_code
        self.recompiles.append(recompile(reasons, code, user_call_site(code), self._compile_id()))

    # --- queries -----------------------------------------------------------------------
    def graph_for(
        self, graph_id: int | None = None, backward: bool = False, compile_id: str | None = None
    ) -> GraphRecord | None:
        return self._table.graph_for(graph_id, backward, compile_id)

    def origins(
        self,
        kernel_name: str,
        backward: bool,
        call_index: int = 0,
        *,
        graph_id: int | None = None,
        compile_id: str | None = None,
    ) -> list[FusedOrigin] | None:
        """What the ``call_index``-th call of ``kernel_name`` fused; see :meth:`GraphTable.origins`."""
        return self._table.origins(kernel_name, backward, call_index, graph_id=graph_id, compile_id=compile_id)

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
        return diagnostics_doc(
            provenance=self._api is not None,
            disable_caches=self.disable_caches,
            warnings=self.warnings,
            graph_breaks=self.graph_breaks,
            recompiles=self.recompiles,
            compiles=self._compiles(),
            graphs=self.graphs,
            runtime=self.runtime,
            callables=list(self._sites.callables.values()),
            calls=self._calls,
        )

    def _compiles(self) -> list[dict[str, Any]]:
        api = self._api
        if api is None or api.dynamo_utils is None:
            return []
        metrics = self._metrics_snapshot
        if metrics is None:
            try:
                metrics = private.compilation_metrics(api)
            except Exception:
                return []
        return compiles_from_metrics(metrics, self._start_us)
