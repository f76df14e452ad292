"""Per-step normalisation, in one place: how a live profile that recorded whole steps is read as a sample.

A live run that recorded some of its steps (metadata ``coverage``: ``recorded_steps`` of ``steps``) holds the
totals of those steps, not of the run. Its values are read per step (divided by the steps recorded) when it is a
sample, and when it is compared with a run that recorded another number of steps; a key that one sample does not
hold is "not in the recorded steps" (it may run in the steps left out), never a drop to nothing. Profiles with
no recorded steps (imports, runs without steps, windows inside a step) are read as they are.

``diff``, ``history``, the advisor's savings and the report all take their factor and their words from here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..model import Profile

NOT_RECORDED = "not in the recorded steps"


@dataclass(frozen=True)
class Steps:
    """What a profile recorded of its run's steps (both 0: no step information)."""

    recorded: int = 0
    total: int = 0

    @property
    def sampled(self) -> bool:
        """Whole steps were recorded, and some were left out."""
        return 0 < self.recorded < self.total

    def words(self) -> str:
        return f"mean of {self.recorded} recorded step{'s' if self.recorded != 1 else ''} of {self.total}"


@dataclass(frozen=True)
class StepScale:
    """Multiply a profile's recorded values by ``factor`` to read them as the comparison reads them."""

    factor: float
    steps: Steps
    per_step: bool

    @property
    def sampled(self) -> bool:
        return self.steps.sampled


def steps_of(metadata: dict[str, Any]) -> Steps:
    cov = metadata.get("coverage")
    if not isinstance(cov, dict):
        return Steps()
    try:
        recorded, total = int(cov.get("recorded_steps") or 0), int(cov.get("steps") or 0)
    except (TypeError, ValueError):
        return Steps()
    if recorded <= 0 or total <= 0:
        return Steps()
    return Steps(recorded, max(total, recorded))


def _scale(steps: Steps, per_step: bool) -> StepScale:
    return StepScale(1.0 / steps.recorded if per_step else 1.0, steps, per_step)


def scale_of(metadata: dict[str, Any]) -> StepScale:
    """One profile on its own: per step when it is a sample of whole steps, else as recorded."""
    steps = steps_of(metadata)
    return _scale(steps, steps.sampled)


def scales_of(base: dict[str, Any], new: dict[str, Any]) -> tuple[StepScale, StepScale]:
    """Two profiles compared: both per step when both recorded whole steps and either is a sample or they
    recorded different numbers of steps; else both as recorded."""
    b, n = steps_of(base), steps_of(new)
    per_step = b.recorded > 0 and n.recorded > 0 and (b.sampled or n.sampled or b.recorded != n.recorded)
    return _scale(b, per_step), _scale(n, per_step)


def series_scale_of(metadata: dict[str, Any]) -> StepScale:
    """One run among many (``history``): per step whenever it recorded whole steps, so that runs that recorded
    different numbers of steps compare (runs that recorded all of the same steps keep their ratios)."""
    steps = steps_of(metadata)
    return _scale(steps, steps.recorded > 0)


def per_step_view(profile: Profile, scale: StepScale) -> Profile | None:
    """The profile with every metric read per step (each column times ``scale.factor``), for the analyses that
    quote its values; None where it cannot be read so: values read as recorded, or a timeline (its spans are of
    the sample, and the analyses measure tree values against them)."""
    if not scale.per_step or (profile.timeline is not None and len(profile.timeline)):
        return None
    metrics = {name: col * scale.factor for name, col in profile.metrics.items()}
    return replace(profile, metrics=metrics, metadata={**profile.metadata, "per_step": statement(scale)})


def statement(scale: StepScale) -> str | None:
    """The words that go with values read per step; None when they are read as recorded."""
    return f"per step ({scale.steps.words()})" if scale.per_step else None


def comparison_statement(base: StepScale, new: StepScale) -> str | None:
    if not base.per_step:
        return None
    return f"per step (base: {base.steps.words()}; new: {new.steps.words()})"


__all__ = [
    "NOT_RECORDED",
    "StepScale",
    "Steps",
    "comparison_statement",
    "per_step_view",
    "scale_of",
    "scales_of",
    "series_scale_of",
    "statement",
    "steps_of",
]
