"""Run a script on the Triton interpreter with the inspector and the launch recorder installed."""

from __future__ import annotations

import os
import platform
import socket
import time
from dataclasses import dataclass
from typing import Any

from ...model import Profile, ProfileBuilder
from ...version import __version__
from ..runner import Outcome, run_program
from .analyze import launch_totals
from .compat import interpreter_module, triton_module
from .intercept import Inspector
from .launches import LaunchRecorder
from .report import InspectReport, build_report


@dataclass(frozen=True)
class InspectRun:
    outcome: Outcome
    report: InspectReport
    profile: Profile
    seconds: float


def inspect_script(target: str, args: list[str], *, write_maps: bool = False) -> InspectRun:
    """``TRITON_INTERPRET=1 python TARGET ARGS`` with every memory op and launch recorded."""
    previous = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "1"  # read by @triton.jit when the script defines its kernels
    triton = triton_module()
    interpreter_module()  # fail with one line before running anything on a Triton we cannot drive
    inspector, launches = Inspector(), LaunchRecorder()
    inspector.install()
    launches.install()
    t0 = time.perf_counter()
    try:
        outcome = run_program(target, args, is_module=False)
    finally:
        seconds = time.perf_counter() - t0
        launches.remove()
        inspector.remove()
        if previous is None:
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = previous
    report = build_report(inspector.launches, inspector.accesses, with_write_maps=write_maps)
    warnings = list(launches.warnings)
    totals = launch_totals(inspector.launches, inspector.accesses)
    if not launches.add_measured(totals):
        warnings.append(
            f"the inspector saw {len(totals)} launch(es) and the launch recorder a different number: "
            "the profile has no inspector flops/bytes"
        )
    builder = ProfileBuilder()
    launches.graft(builder)
    builder.ensure_metric("count")
    metadata: dict[str, Any] = {
        "tool": "kernelscope",
        "tool_version": __version__,
        "source": {"format": "triton-interpreter"},
        "command": [target, *args],
        "start_time": time.time() - seconds,
        "host": socket.gethostname(),
        "python": platform.python_version(),
        "frameworks": {"triton": triton.__version__},
        "exit_code": outcome.exit_code,
        "warnings": warnings,
        "device_run": False,
        "time_source": "triton-interpreter",  # time_ns: the interpreter's wall time per launch, on the CPU
        "wall_ns": int(seconds * 1e9),
    }
    return InspectRun(outcome, report, builder.build(metadata), seconds)
