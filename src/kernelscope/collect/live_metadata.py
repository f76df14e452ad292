"""The metadata of a live PyTorch profile: tool, host, devices, what was recorded and what was not."""

from __future__ import annotations

import os
import platform
import socket
from typing import TYPE_CHECKING, Any, Protocol

from ._process import git_commit
from .torch_meta import torch_devices

if TYPE_CHECKING:
    from .accounts import Accounts, StepLog
    from .plan import Plan
    from .policy import Decision
    from .recorder import Recorder
    from .steps import StepDetector


class LiveRun(Protocol):
    """What the metadata and the checkpoints read of a live session (``torch_live.Session`` is one)."""

    argv: list[str]
    start_time: float
    plan: Plan
    log: StepLog
    accounts: Accounts
    recorder: Recorder
    step_source: StepDetector
    imported: list[str]
    deferred: int
    compile_pauses: int
    last_decision: Decision

    @property
    def record_from(self) -> str: ...

    @property
    def recorded_steps(self) -> int: ...

    @property
    def steps(self) -> int: ...

    @property
    def windows(self) -> int: ...

    @property
    def fold_time(self) -> float: ...

    @property
    def builder(self) -> Any: ...


def run_metadata() -> dict[str, Any]:
    """What does not change during a run (host, versions, devices, git commit): computed once per run
    by a checkpoint (collect/checkpoint.py), not at every write."""
    import torch

    from ..version import __version__

    return {
        "tool": "kernelscope",
        "tool_version": __version__,
        "source": {"format": "torch-live"},
        "host": socket.gethostname(),
        "python": platform.python_version(),
        "frameworks": {"torch": torch.__version__},
        "devices": torch_devices(),
        "rank": int(os.environ.get("RANK", "0")),
        "world_size": int(os.environ.get("WORLD_SIZE", "1")),
        "git_commit": git_commit(),
    }


def session_metadata(s: LiveRun, run: dict[str, Any] | None = None) -> dict[str, Any]:
    """The profile's metadata; ``run``: ``run_metadata()`` computed earlier in this run (else now)."""
    r = s.recorder
    return {
        **(run if run is not None else run_metadata()),
        "command": s.argv,
        "start_time": s.start_time,
        "steps": s.log.steps,
        "windows": r.windows,
        "events": r.events,
        "fold_seconds": r.fold_time,
        "wall_ns": int(r.recorded_seconds * 1e9),  # wall time the recorded windows cover
        "recording": {
            "from": s.record_from,
            "plan": s.plan.describe(),
            "recorded_steps": s.recorded_steps,
            "recorded_seconds": r.recorded_seconds,
            "deferred_window_changes": s.deferred,
            "paused_for_compiling": s.compile_pauses,
            "last_decision": s.last_decision.reason,
            "own_ns": [list(g) for g in r.own_ns],  # kernelscope holding the program (collect/recorder.py)
            "fold": {**r.background.metadata(), "queued": r.queued} if r.background is not None else "inline",
        },
        "coverage": _coverage(s),
        "device_run": r.device_run,
    }


def _coverage(s: LiveRun) -> dict[str, Any]:
    cov = s.accounts.coverage(s.log)
    cov["step_source"] = s.step_source.source
    if s.accounts.import_seconds:
        cov["imported"] = list(s.imported)
    behind = s.recorder.background
    if behind is not None and behind.windows:  # folding beside the program: a core's time, not the program's
        cov["background_fold_cpu_seconds"] = behind.cpu
    missed = []
    if s.recorder.lost_windows:
        cov["lost_windows"] = s.recorder.lost_windows
        missed.append(
            f"{s.recorder.lost_windows} recorded window(s) lost: torch could not post-process them (the warnings say "
            "why)"
        )
    if s.deferred:
        missed.append(
            f"recording waited {s.deferred} time(s) for torch code that held the profiler's state (an optimizer "
            "step, backward, a compiled region) to return"
        )
    if missed:
        cov["missed"] = "; ".join(missed)
    return cov
