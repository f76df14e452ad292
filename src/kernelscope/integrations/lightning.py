"""A Lightning profiler: ``lightning.Trainer(profiler=KernelscopeProfiler("fit.ksprof"))``.

Recording starts when the trainer sets the profiler up for ``fit``, every training batch
(``run_training_batch``, optimizer step included) is a kernelscope step, and the profile is written when the
trainer tears the profiler down (``describe()``); ``options`` are ``kernelscope.profile()``'s. ``summary()``
gives the coverage line. After ``fit``, ``.result`` holds the profile.
"""

from __future__ import annotations

from typing import Any

from lightning.pytorch.profilers import Profiler

from ..analysis.summary import coverage_note
from ._session import SessionResults, TrainerSession

STEP_ACTION = "run_training_batch"  # Lightning's training loop: with trainer.profiler.profile("run_training_batch")


class KernelscopeProfiler(SessionResults, Profiler):  # type: ignore[misc]
    def __init__(self, path: str = "lightning.ksprof", stages: tuple[str, ...] = ("fit",), **options: Any) -> None:
        super().__init__()
        self._session = TrainerSession(path, options, "lightning.Trainer")
        self._stages = stages

    def setup(self, stage: str, local_rank: int | None = None, log_dir: str | None = None) -> None:
        super().setup(stage, local_rank, log_dir)
        if str(stage) in self._stages or getattr(stage, "value", None) in self._stages:
            self._session.begin(local_rank)

    def start(self, action_name: str) -> None:
        pass

    def stop(self, action_name: str) -> None:
        if action_name == STEP_ACTION:
            self._session.step()

    def summary(self) -> str:
        if self._session.profile is None:
            return ""
        note = coverage_note(self._session.profile.metadata)
        return f"kernelscope: {note or 'every step recorded'}; profile: {self._session.saved}"

    def teardown(self, stage: str | None) -> None:
        self._session.end()
        super().teardown(stage)


__all__ = ["KernelscopeProfiler"]
