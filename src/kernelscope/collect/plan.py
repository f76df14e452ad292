"""Which steps are recorded: skip_first, a torch.profiler-style schedule, --steps and --duration.

Pure: given how many ``step()`` calls were made and how long recording has run, say whether the
current step is recorded. The session applies the answer at the next safe point (safepoint.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import UsageError


@dataclass(frozen=True)
class Schedule:
    """torch.profiler.schedule's cycle: ``wait`` steps off, ``warmup`` steps off (kernelscope keeps no
    warm-up data: the profiler runs only while recording), ``active`` steps on; ``repeat`` cycles (0:
    forever)."""

    wait: int = 0
    warmup: int = 0
    active: int = 1
    repeat: int = 0

    @staticmethod
    def parse(text: str) -> Schedule:
        """``wait=1,warmup=1,active=3,repeat=2`` (any subset; active defaults to 1)."""
        values: dict[str, int] = {}
        for part in text.split(","):
            key, sep, value = part.partition("=")
            key = key.strip()
            if not sep or key not in ("wait", "warmup", "active", "repeat"):
                raise UsageError(f"--schedule: expected wait=N,warmup=N,active=N,repeat=N, got {text!r}")
            try:
                values[key] = int(value)
            except ValueError:
                raise UsageError(f"--schedule: {key} must be a whole number, got {value!r}") from None
            if values[key] < 0:
                raise UsageError(f"--schedule: {key} must not be negative")
        schedule = Schedule(**values)
        if schedule.active < 1:
            raise UsageError("--schedule: active must be at least 1")
        return schedule


@dataclass(frozen=True)
class Plan:
    skip_first: int = 0
    schedule: Schedule | None = None
    steps: int | None = None  # stop after this many recorded steps
    duration: float | None = None  # stop after this many seconds of recording

    def recorded_step(self, step: int) -> bool:
        """Is step ``step`` (0-based: the number of ``step()`` calls made before it) recorded?"""
        if step < self.skip_first:
            return False
        if self.schedule is None:
            return True
        s = self.schedule
        k = step - self.skip_first
        cycle = s.wait + s.warmup + s.active
        if s.repeat and k >= cycle * s.repeat:
            return False
        return k % cycle >= s.wait + s.warmup

    def finished(self, step: int, recorded_steps: int, recorded_seconds: float) -> bool:
        """Nothing from ``step`` on will be recorded."""
        if self.steps is not None and recorded_steps >= self.steps:
            return True
        if self.duration is not None and recorded_seconds >= self.duration:
            return True
        s = self.schedule
        if s is not None and s.repeat:
            return step - self.skip_first >= (s.wait + s.warmup + s.active) * s.repeat
        return False

    @property
    def explicit(self) -> bool:
        """The user said which steps or how long to record (the overhead budget then stays off)."""
        return self.schedule is not None or self.steps is not None or self.duration is not None

    def wants(self, step: int, recorded_steps: int, recorded_seconds: float) -> bool:
        return self.recorded_step(step) and not self.finished(step, recorded_steps, recorded_seconds)

    def describe(self) -> dict[str, object]:
        out: dict[str, object] = {"skip_first": self.skip_first}
        if self.schedule is not None:
            s = self.schedule
            out["schedule"] = {"wait": s.wait, "warmup": s.warmup, "active": s.active, "repeat": s.repeat}
        if self.steps is not None:
            out["steps"] = self.steps
        if self.duration is not None:
            out["duration_s"] = self.duration
        return out
