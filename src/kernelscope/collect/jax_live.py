"""Live JAX profiling: run a program under ``jax.profiler`` and fold the XPlane it writes into a Profile.

The program runs as under ``python`` (``collect.runner``); JAX's profiler records every XLA op execution
and, with ``enable_hlo_proto``, each executable's HLO in the XPlane's metadata plane, which the XPlane
importer joins back to name stacks and source lines. Python tracing is left off: the source lines come
from the HLO's trace-time stacks, not from the interpreter, so it would only add overhead.
"""

from __future__ import annotations

import ast
import glob
import importlib.util
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any, TypeVar

from ..errors import BadInputError
from ..model import Profile, ProfileBuilder
from .jax_calls import CallSites
from .jax_reads import HostReads

T = TypeVar("T")


def uses_jax(target: str, is_module: bool = False) -> bool:
    """Whether the program's entry file imports jax (and not torch): how ``run`` picks this collector."""
    path = target
    if is_module:
        try:
            spec = importlib.util.find_spec(target)
        except (ImportError, ValueError):
            return False
        path = spec.origin if spec is not None and spec.origin else ""
    elif os.path.isdir(target):
        path = os.path.join(target, "__main__.py")
    try:
        with open(path, "rb") as fh:
            tree = ast.parse(fh.read(), filename=path)
    except (OSError, SyntaxError, ValueError):
        return False
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            imported.add(node.module.split(".")[0])
    return bool(imported & {"jax", "flax", "optax", "equinox", "haiku"}) and "torch" not in imported


class JaxSession:
    """``start()`` begins a ``jax.profiler`` trace into a temporary folder; ``stop()`` imports it and cleans up."""

    def __init__(self, keep_xplane: str | None = None) -> None:
        self.keep_xplane = keep_xplane  # copy the raw XPlane here as well
        self._dir: str | None = None
        self._started_ns = 0
        self._clock = time.perf_counter
        self._start_cost = 0.0  # seconds in jax.profiler.start_trace
        self._program_from = 0.0  # when the program's own time began (after start_trace returned)
        self.argv: list[str] = []
        self.calls = CallSites()
        self.reads = HostReads()

    def start(self) -> None:
        try:
            import jax
        except ImportError as exc:
            raise BadInputError(f"profiling JAX needs jax ({exc}); pip install 'kernelscope[jax]'") from None
        options = jax.profiler.ProfileOptions()
        options.python_tracer_level = 0
        options.enable_hlo_proto = True
        self._dir = tempfile.mkdtemp(prefix="kernelscope-jax-")
        self._started_ns = time.time_ns()
        began = self._clock()
        self.calls.install(jax)
        self.reads.install(jax)
        jax.profiler.start_trace(self._dir, profiler_options=options)
        self._program_from = self._clock()
        self._start_cost = self._program_from - began

    def stop(self) -> Profile:
        import jax

        from ..importers.xplane import load_xplane

        if self._dir is None:
            raise RuntimeError("JaxSession.stop() without start()")
        folder, self._dir = self._dir, None
        program_end = self._clock()
        self.calls.remove()
        self.reads.remove()
        try:
            stop_trace: Any = jax.profiler.stop_trace  # untyped in jax
            stop_trace()
            stopped = self._clock()
            files = sorted(glob.glob(os.path.join(folder, "**", "*.xplane.pb"), recursive=True), key=os.path.getsize)
            if files and self.keep_xplane:
                shutil.copyfile(files[-1], self.keep_xplane)
            try:
                profile = load_xplane(files[-1], self.calls.calls) if files else None
            except BadInputError as exc:  # nothing ran: an empty profile that says so
                profile = None
                reason = str(exc).split(": ", 1)[-1]
            else:
                reason = "jax.profiler wrote no XPlane file"
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        imported = self._clock()
        if profile is None:
            empty = ProfileBuilder()
            empty.ensure_metric("time_ns")
            profile = empty.build({"warnings": [f"no JAX work was recorded ({reason})"]})
        meta = profile.metadata
        meta.pop("source", None)
        meta.update(_run_metadata(self.argv, self._started_ns, jax))
        program = program_end - self._program_from
        meta["wall_ns"] = int(program * 1e9)
        if self.reads.by_line:  # device->host reads by line, for the advisor's xla_host_transfer
            meta["host_reads"] = self.reads.rows()
            meta["jit_calls"] = {name: len(stacks) for name, stacks in sorted(self.calls.calls.items())}
        if self.reads.note:
            meta.setdefault("warnings", []).append(self.reads.note)
        meta["coverage"] = jax_coverage(program, self._start_cost, stopped - program_end, imported - stopped)
        return profile


def profile_call(
    fn: Callable[[], T], argv: list[str] | None = None, keep_xplane: str | None = None
) -> tuple[T, Profile]:
    """Run ``fn()`` under the JAX profiler; its result and the profile (saved even if ``fn`` raises)."""
    session = JaxSession(keep_xplane)
    session.argv = list(argv or [])
    session.start()
    try:
        result = fn()
    finally:
        profile = session.stop()
    return result, profile


def profile_script(
    target: str, args: list[str], is_module: bool = False, keep_xplane: str | None = None
) -> tuple[Profile, Any]:
    """Run a program like ``python SCRIPT ARGS`` / ``python -m MODULE ARGS`` under the JAX profiler.

    Returns the profile (with ``exit_code`` in its metadata) and the runner's ``Outcome``; ``keep_xplane``
    also keeps the raw XPlane JAX wrote (it is imported, then deleted, otherwise).
    """
    from .runner import check_target, run_program

    check_target(target, is_module)
    outcome, profile = profile_call(
        lambda: run_program(target, list(args), is_module),
        [*(["-m"] if is_module else []), target, *args],
        keep_xplane,
    )
    profile.metadata["exit_code"] = outcome.exit_code
    return profile, outcome


def jax_coverage(program: float, start: float, stop: float, fold: float) -> dict[str, Any]:
    """The ``coverage`` metadata of a JAX run, in the keys torch runs use.

    ``jax.profiler`` records every XLA op execution from ``start_trace`` to ``stop_trace``: the whole program
    is recorded. kernelscope's own cost is what it adds around the program: starting the trace, stopping it
    (JAX collects and writes the XPlane) and importing the XPlane. What the profiler's event recording
    costs inside the program's time is not separable from it (left in ``program_seconds``).
    """
    cost = start + stop + fold
    return {
        "run_seconds": program + cost,
        "program_seconds": program,
        "recorded_seconds": program,
        "recorded_wall_seconds": program,
        "steps": 0,
        "recorded_steps": 0,
        "max_overhead": 0.0,  # no budget: jax.profiler records everything
        "overhead_seconds": cost,
        "overhead_parts": {"start_trace": start, "stop_trace": stop, "import": fold},
        "budget_holds": False,
        "step_source": "none",
        "records": "every XLA op execution between start_trace and stop_trace",
    }


def _run_metadata(argv: list[str], started_ns: int, jax: Any) -> dict[str, Any]:
    import platform

    return {
        "framework": "jax",
        "collector": "jax.profiler",
        "command": " ".join(argv),
        "argv": argv,
        "start_time_ns": started_ns,
        "host": platform.node(),
        "python": sys.version.split()[0],
        "jax_version": getattr(jax, "__version__", ""),
        "jax_backend": jax.default_backend(),
    }


__all__ = ["JaxSession", "jax_coverage", "profile_call", "profile_script", "uses_jax"]
