"""Live PyTorch collection: run torch.profiler with the Python tracer and fold its events as we go.

A Session owns one logical profile. Each *window* (between activate and
deactivate) is one torch.profiler run; when a window closes its events are
folded into the calling-context tree at once and the profiler's own results
are dropped, so memory holds the (small) tree, not millions of events.
"""

from __future__ import annotations

import contextlib
import gc
import os
import platform
import signal
import socket
import sys
import threading
import time
import warnings
from collections import defaultdict, deque
from collections.abc import Iterator
from typing import Any

from ..model import Profile, ProfileBuilder, TimelineBuilder
from ..model.profile import prune_empty
from ..model.timeline import LINKED, Category

PROFILE_MEMORY_DEFAULT = True
# Recording input shapes is most of the profiler's step overhead (see benchmarks/README.md). By
# default shapes are recorded for the first SHAPE_SECONDS of profiled time only; later calls of an
# op at the same context get that context's FLOPs and bytes per call (exact for static shapes).
SHAPE_MODES = ("sample", "all", "off")
SHAPE_SECONDS_DEFAULT = 1.0


class ModuleRegistry:
    """Maps a module's id to its attribute path (``blocks.1.attn.qkv``).

    A global forward pre-hook remembers each module that runs; paths are worked
    out when a window is folded, from the outermost modules seen.
    """

    def __init__(self, on_call: Any = None) -> None:
        self._seen: dict[int, Any] = {}
        self._paths: dict[int, tuple[str, str]] = {}
        self._handle: Any = None
        self._on_call = on_call  # called at every eager module call: a safe point between ops

    def install(self) -> None:
        import torch

        seen = self._seen
        is_compiling = torch.compiler.is_compiling
        on_call = self._on_call

        def hook(module: Any, args: Any) -> None:
            # Under torch.compile tracing this is constant-folded away: recording the module
            # there would be a side effect Dynamo refuses. Compiled code gets its module paths
            # from Inductor's provenance instead.
            if not is_compiling():
                seen.setdefault(id(module), module)
                if on_call is not None:
                    on_call()

        self._handle = torch.nn.modules.module.register_module_forward_pre_hook(hook)
        # torch warns that global hooks fire once more for an OptimizedModule: harmless for a
        # hook that only remembers modules, and noise in the user's output.
        warnings.filterwarnings("ignore", message=r"Using `torch.compile\(module\)` when there are global hooks")

    def remove(self) -> None:
        if self._handle is not None:
            self._handle.remove()
            self._handle = None

    def resolve(self) -> None:
        if len(self._paths) >= len(self._seen):
            return
        children: set[int] = set()
        for mod in self._seen.values():
            for _, sub in mod.named_modules():
                if sub is not mod:
                    children.add(id(sub))
        for key, mod in self._seen.items():
            if key in children:
                continue
            root_name = type(mod).__name__
            for name, sub in mod.named_modules():
                self._paths.setdefault(id(sub), (name or root_name, type(sub).__name__))

    def path(self, self_ptr: int) -> tuple[str, str] | None:
        return self._paths.get(self_ptr)


class Session:
    """One profile being collected. Not thread-safe; one per process (see api.py)."""

    def __init__(
        self,
        *,
        shapes: str = "sample",
        shape_seconds: float = SHAPE_SECONDS_DEFAULT,
        profile_memory: bool = PROFILE_MEMORY_DEFAULT,
        skip_first: int = 0,
        compile_capture: bool = True,
        argv: list[str] | None = None,
    ) -> None:
        if shapes not in SHAPE_MODES:
            raise ValueError(f"shapes must be one of {', '.join(SHAPE_MODES)}, not {shapes!r}")
        self.shapes = shapes
        self.shape_seconds = shape_seconds
        self._shapes_sampled = False  # the shape-recording window is over
        self._window_shapes = False
        self._window_start = 0.0
        self._shaped: dict[str, dict[int, float]] = {}
        self.profile_memory = profile_memory
        self.skip_first = skip_first
        self.builder = ProfileBuilder()
        self.timeline = TimelineBuilder()
        self.modules = ModuleRegistry(self._maybe_end_shape_window if shapes == "sample" else None)
        self.scope_metrics: dict[str, deque[dict[str, float]]] = defaultdict(deque)
        self.steps = 0
        self.windows = 0
        self.start_time = time.time()
        self.argv = list(argv if argv is not None else sys.argv)
        self._prof: Any = None
        self._walk_state: Any = None
        self._device_run = False
        self._cuda = False
        self._compile: Any = None
        self._want_compile = compile_capture
        self._finalized = False
        self.warnings: list[str] = []
        self.fold_seconds = 0.0
        self.events = 0

    # --- lifecycle ---------------------------------------------------------------
    def start(self) -> None:
        self.modules.install()
        if self._want_compile:
            self._compile = _start_compile_capture(self.warnings)
        if self.skip_first <= 0:
            self.activate()

    @property
    def active(self) -> bool:
        return self._prof is not None

    def activate(self) -> None:
        if self._prof is not None or self._finalized:
            return
        import torch
        from torch.profiler import ProfilerActivity, profile

        activities = [ProfilerActivity.CPU]
        self._cuda = torch.cuda.is_available()
        if self._cuda:
            activities.append(ProfilerActivity.CUDA)
        self._window_shapes = self.shapes == "all" or (self.shapes == "sample" and not self._shapes_sampled)
        gc.collect()
        with _quiet_fd(2):
            prof = profile(
                activities=activities,
                record_shapes=self._window_shapes,
                profile_memory=self.profile_memory,
                with_stack=True,
                with_modules=True,
            )
            prof.__enter__()  # type: ignore[no-untyped-call]
        self._prof = prof
        self.windows += 1
        self._window_start = time.perf_counter()

    def _maybe_end_shape_window(self) -> None:
        """At a module call (between ops): end the shape-recording window once it has run long enough."""
        if (
            self._window_shapes
            and self.shapes == "sample"
            and self._prof is not None
            and time.perf_counter() - self._window_start >= self.shape_seconds
        ):
            with _sigint_deferred():
                self._deactivate()
                self.activate()

    def deactivate(self) -> None:
        with _sigint_deferred():  # a Ctrl-C mid-fold would lose the window's events
            self._deactivate()

    def _deactivate(self) -> None:
        prof = self._prof
        if prof is None:
            return
        self._prof = None
        with _quiet_fd(2):
            prof.__exit__(None, None, None)
        t0 = time.perf_counter()
        self._fold(prof)
        if self._window_shapes and self.shapes == "sample":
            self._shapes_sampled = True
            self._shaped = {m: dict(self.builder.metric_values(m)) for m in ("count", "flops", "bytes")}
        self.fold_seconds += time.perf_counter() - t0
        del prof
        gc.collect()

    def step(self) -> None:
        """Mark a step boundary; the first ``skip_first`` steps are not recorded."""
        self.steps += 1
        if self.steps == self.skip_first and not self.active:
            self.activate()

    def scope_enter(self, name: str, metrics: dict[str, float] | None) -> bool:
        if not self.active:
            return False
        self.scope_metrics[name].append(dict(metrics or {}))
        return True

    def finalize(self) -> Profile:
        if not self._finalized:
            self.deactivate()
            self.modules.remove()
            self._finalized = True
        metadata = self._metadata()
        if self._compile is not None:
            metadata["compile"] = self._compile.diagnostics()
            self.warnings.extend(self._compile.warnings)
            self._compile.__exit__(None, None, None)
            self._compile = None
        metadata["warnings"] = list(self.warnings)
        timeline = self.timeline.build() if len(self.timeline) else None
        if self._shaped:
            metadata["shapes"] = self._extrapolate_costs()
        else:
            metadata["shapes"] = {"mode": self.shapes}
        for metric in ("time_ns", "cpu_time_ns", "count"):
            self.builder.ensure_metric(metric)
        return prune_empty(self.builder.build(metadata, timeline))

    def _extrapolate_costs(self) -> dict[str, Any]:
        """FLOPs/bytes for calls made after the shape window: per-call values of the same context."""
        counts_now = self.builder.metric_values("count")
        shaped_counts = self._shaped.get("count", {})
        extrapolated_calls = 0.0
        for metric in ("flops", "bytes"):
            for node, value in self._shaped.get(metric, {}).items():
                calls = shaped_counts.get(node, 0.0)
                extra = counts_now.get(node, 0.0) - calls
                if calls > 0 and extra > 0:
                    self.builder.add(node, metric, value / calls * extra)
                    if metric == "flops":
                        extrapolated_calls += extra
        return {
            "mode": "sample",
            "recorded_seconds": self.shape_seconds,
            "note": "input shapes recorded for the first window only; FLOPs and bytes of later calls "
            "are the same context's per-call values (exact when shapes do not change)",
            "extrapolated_calls": extrapolated_calls,
        }

    # --- folding ---------------------------------------------------------------
    def _fold(self, prof: Any) -> None:
        from ..build.torch_tree import TreeWalker, WalkState

        results = prof.profiler.kineto_results
        # device kernels come from Kineto's flat event list; a CPU-only session has none to look for
        device_events = [e for e in results.events() if _is_device(e)] if self._cuda else []
        self._device_run = self._device_run or bool(device_events)
        self.modules.resolve()
        if self._walk_state is None:
            self._walk_state = WalkState()
        placer = _placer(self._compile)
        walker = TreeWalker(
            self.builder,
            self.modules.path,
            device_run=self._device_run,
            scope_metrics=self.scope_metrics,
            compiled=placer,
            state=self._walk_state,
            shapes=self._window_shapes,
        )
        roots = results.experimental_event_tree()
        walker.walk(roots)
        if self._compile is not None and self._walk_state.regions:
            self._walk_state.regions = 0
            try:
                self._compile.observe_events(roots)
            except Exception as exc:  # private torch data: degrade to a warning, never lose the profile
                self.warnings.append(f"compiled-region timing skipped ({type(exc).__name__}: {exc})")
        self.events += self._walk_state.events
        self._walk_state.events = 0
        if device_events:
            self._fold_device(device_events)
        self._walk_state.corr_node.clear()

    def _fold_device(self, events: list[Any]) -> None:
        from ..model import Frame

        b = self.builder
        corr_node = self._walk_state.corr_node
        for e in events:
            node = corr_node.get(e.linked_correlation_id(), 0)
            device = f"cuda:{e.device_index()}"
            stream = int(e.device_resource_id())
            name = e.name()
            kernel = b.child(node, Frame.kernel(name, device, stream))
            dur = float(e.duration_ns())
            b.add(kernel, "time_ns", dur)
            b.add(kernel, "count", 1.0)
            cat = (
                Category.MEMCPY
                if "memcpy" in name.lower()
                else Category.MEMSET
                if "memset" in name.lower()
                else Category.KERNEL
            )
            if "nccl" in name.lower():
                cat = Category.COMM
            track = self.timeline.track(f"stream {stream}", device)
            self.timeline.add(
                kernel, track, int(e.start_ns()), int(dur), cat, LINKED if node else 0, e.correlation_id()
            )

    def _metadata(self) -> dict[str, Any]:
        import torch

        from .. import __version__

        devices: list[dict[str, Any]] = [
            {"type": "cpu", "name": platform.processor() or platform.machine(), "cores": os.cpu_count()}
        ]
        if torch.cuda.is_available():
            for i in range(torch.cuda.device_count()):
                p = torch.cuda.get_device_properties(i)
                devices.append(
                    {
                        "type": "cuda",
                        "index": i,
                        "name": p.name,
                        "arch": f"sm_{p.major}{p.minor}",
                        "sms": p.multi_processor_count,
                        "memory_bytes": p.total_memory,
                    }
                )
        return {
            "tool": "kernelscope",
            "tool_version": __version__,
            "source": {"format": "torch-live"},
            "command": self.argv,
            "start_time": self.start_time,
            "host": socket.gethostname(),
            "python": platform.python_version(),
            "frameworks": {"torch": torch.__version__},
            "devices": devices,
            "rank": int(os.environ.get("RANK", "0")),
            "world_size": int(os.environ.get("WORLD_SIZE", "1")),
            "git_commit": _git_commit(),
            "steps": self.steps,
            "windows": self.windows,
            "events": self.events,
            "fold_seconds": self.fold_seconds,
            "device_run": self._device_run,
        }


def _is_device(e: Any) -> bool:
    try:
        return str(e.device_type()).endswith("CUDA")
    except Exception:  # pragma: no cover - older KinetoEvent APIs
        return False


def _placer(capture: Any) -> Any:
    if capture is None:
        return None
    try:
        from ..build.compiled_placer import CapturePlacer
    except ImportError:
        return None
    return CapturePlacer(capture)


def _start_compile_capture(warnings: list[str]) -> Any:
    try:
        from .compile import CompileCapture
    except ImportError:
        return None
    try:
        capture = CompileCapture()
        capture.__enter__()
    except Exception as exc:  # private APIs: degrade, never crash the user's run
        warnings.append(f"torch.compile provenance capture unavailable ({exc.__class__.__name__}: {exc})")
        return None
    return capture


def _git_commit() -> str | None:
    import subprocess

    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=2, check=False
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return out or None


@contextlib.contextmanager
def _sigint_deferred() -> Iterator[None]:
    """Hold a Ctrl-C until the block is done, then raise it (main thread only; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: pending.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if pending:
        raise KeyboardInterrupt


class _quiet_fd:
    """Silence a file descriptor (torch 2.13 prints USDT lines on profiler start/stop)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.saved: int | None = None

    def __enter__(self) -> None:
        if os.environ.get("KERNELSCOPE_DEBUG"):
            return
        try:
            sys.stderr.flush()
            self.saved = os.dup(self.fd)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.fd)
            os.close(devnull)
        except OSError:
            self.saved = None

    def __exit__(self, *exc: object) -> None:
        if self.saved is not None:
            os.dup2(self.saved, self.fd)
            os.close(self.saved)
