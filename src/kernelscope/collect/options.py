"""The options of a live session: one frozen value shared by the CLI (`run`), `kernelscope.profile()` and
the session itself."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from .plan import Plan, Schedule
from .policy import GRACE_SECONDS_DEFAULT, MAX_OVERHEAD_DEFAULT, Budget

SHAPE_MODES = ("sample", "all", "off")
MEMORY_MODES = ("sample", "all", "off")
RECORD_FROM = ("start", "first-call")
FOLD_MODES = ("background", "inline")
# Fold as the run goes: a window is folded and a new one opened after this long or this many torch calls.
FOLD_SECONDS_DEFAULT = 1.0
FOLD_CALLS_DEFAULT = 200_000
SHAPE_SECONDS_DEFAULT = 1.0


@dataclass(frozen=True)
class LiveOptions:
    """``shapes``/``memory``: "sample" (the first ``shape_seconds`` of recording, extrapolated after),
    "all" or "off". ``max_overhead``: the fraction of the program's own time kernelscope may spend (0: record
    everything; None: 0.1, or 0 when the plan says which steps to record). ``grace_seconds``: the cost always
    allowed, so a short run is recorded whole. ``record_from``: "start" or "first-call" (the program's first
    op or module call). ``fold_seconds``/``fold_calls``: a window is folded after this long or this many torch
    calls. ``fold``: "background" (a stopped window folds in a forked child while the program runs on,
    where the platform allows) or "inline"."""

    plan: Plan = field(default_factory=Plan)
    shapes: str = "sample"
    shape_seconds: float = SHAPE_SECONDS_DEFAULT
    memory: str = "sample"
    max_overhead: float | None = None
    grace_seconds: float = GRACE_SECONDS_DEFAULT
    record_from: str = "start"
    fold_seconds: float = FOLD_SECONDS_DEFAULT
    fold_calls: int = FOLD_CALLS_DEFAULT
    compile_capture: bool = True
    native: bool = False  # sample native stacks from outside (collect/native) at ``native_rate`` a second
    native_rate: int = 20
    fold: str = "background"  # "background": a window folds in a forked child (collect/background.py)

    def __post_init__(self) -> None:
        for name, value, allowed in (
            ("shapes", self.shapes, SHAPE_MODES),
            ("memory", self.memory, MEMORY_MODES),
            ("record_from", self.record_from, RECORD_FROM),
            ("fold", self.fold, FOLD_MODES),
        ):
            if value not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}, not {value!r}")
        if self.max_overhead is not None and self.max_overhead < 0:
            raise ValueError("max_overhead must not be negative")
        if not 1 <= self.native_rate <= 1000:
            raise ValueError("native_rate must be between 1 and 1000 samples a second")
        if self.grace_seconds < 0:
            raise ValueError("grace_seconds must not be negative")

    @staticmethod
    def make(
        *,
        skip_first: int = 0,
        steps: int | None = None,
        duration: float | None = None,
        schedule: Schedule | str | None = None,
        plan: Plan | None = None,
        shapes: str = "sample",
        profile_memory: bool = True,
        memory: str | None = None,
        **rest: Any,
    ) -> LiveOptions:
        """From the keyword options of ``kernelscope.profile()``/``start()`` (the older spellings too)."""
        if isinstance(schedule, str):
            schedule = Schedule.parse(schedule)
        if plan is None:
            plan = Plan(skip_first=skip_first, schedule=schedule, steps=steps, duration=duration)
        if memory is None:
            memory = "off" if not profile_memory else "all" if shapes == "all" else "sample"
        return LiveOptions(plan=plan, shapes=shapes, memory=memory, **rest)

    @property
    def budget(self) -> Budget:
        fraction = self.max_overhead
        if fraction is None:  # an explicit plan records what it asks for
            fraction = 0.0 if self.plan.explicit else MAX_OVERHEAD_DEFAULT
        return Budget(fraction, self.grace_seconds)

    def with_(self, **changes: Any) -> LiveOptions:
        return replace(self, **changes)
