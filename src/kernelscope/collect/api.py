"""The Python API (Proton-like): profile(), start/finalize, activate/deactivate, scope, step.

import kernelscope
with kernelscope.profile("train.ksprof", skip_first=2):
    for batch in data:
        with kernelscope.scope("step", metrics={"tokens": batch.numel()}):
            train_step(batch)
        kernelscope.step()
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from ..errors import UsageError
from ..model import Profile
from .options import FOLD_CALLS_DEFAULT, FOLD_SECONDS_DEFAULT, LiveOptions
from .plan import Schedule
from .policy import GRACE_SECONDS_DEFAULT
from .torch_live import Session

F = TypeVar("F", bound=Callable[..., Any])

_session: Session | None = None


def start(
    options: LiveOptions | None = None,
    *,
    skip_first: int = 0,
    shapes: str = "sample",
    shape_seconds: float = 1.0,
    profile_memory: bool = True,
    memory: str | None = None,
    max_overhead: float | None = None,
    grace_seconds: float = GRACE_SECONDS_DEFAULT,
    compile_capture: bool = True,
    native: bool = False,
    native_rate: int = 20,
    steps: int | None = None,
    duration: float | None = None,
    schedule: Schedule | str | None = None,
    record_from: str = "start",
    fold_seconds: float = FOLD_SECONDS_DEFAULT,
    fold_calls: int = FOLD_CALLS_DEFAULT,
    fold: str = "background",
    argv: list[str] | None = None,
) -> Session:
    """Begin a profile (``options``: a ready ``LiveOptions``, else built from the keywords).

    With ``skip_first=N`` recording starts after N calls to ``step()``.
    ``steps``/``duration``: stop recording after that many recorded steps / seconds of recording.
    ``schedule``: torch.profiler-style ``Schedule(wait, warmup, active, repeat)`` or its text form
    ``"wait=1,active=3,repeat=2"``, counted in ``step()`` calls after ``skip_first``.
    ``record_from``: "start" (now) or "first-call" (the first torch call from the program's own
    files or the first ``nn.Module`` call: imports and set-up stay out).
    ``fold_seconds``/``fold_calls``: events are folded into the tree (and dropped) after this long
    or this many torch calls, so memory stays flat however long the run. ``fold``: "background" (a stopped
    window is folded in a forked child while the program runs on, on Linux) or "inline".

    ``shapes``: "sample" (default) records input shapes for the first second of profiled time and
    extrapolates FLOPs/bytes per context after that; "all" records them throughout (slower,
    exact with changing shapes); "off" records none (no FLOPs/bytes).
    ``memory``: allocation events (``alloc_bytes``) in the same sampling window ("sample"), in every
    window ("all") or not at all ("off"); default: "all" with ``shapes="all"``, "off" with
    ``profile_memory=False``, else "sample".
    ``max_overhead``: spend at most this fraction of the program's own time on recording (everything counts:
    recording, stopping, folding, starting windows), never less than ``grace_seconds`` (3 s: a short run is
    recorded whole); past it the run is sampled in whole steps. 0: record every op. Default: 0.1, or 0 when
    ``steps``, ``duration`` or ``schedule`` is given. The profile's ``coverage`` metadata says what was
    recorded.
    ``native``: also sample the native stacks of the program's thread from outside (py-spy, at ``native_rate``
    a second) and place them under the ops and lines that ran (docs/native.md).
    """
    global _session
    if _session is not None:
        raise UsageError("a kernelscope profile is already running; finalize() it first")
    if options is None:
        try:
            options = LiveOptions.make(
                skip_first=skip_first,
                steps=steps,
                duration=duration,
                schedule=schedule,
                shapes=shapes,
                profile_memory=profile_memory,
                memory=memory,
                shape_seconds=shape_seconds,
                max_overhead=max_overhead,
                grace_seconds=grace_seconds,
                record_from=record_from,
                fold_seconds=fold_seconds,
                fold_calls=fold_calls,
                fold=fold,
                compile_capture=compile_capture,
                native=native,
                native_rate=native_rate,
            )
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    s = Session(options, argv=argv)
    s.start()
    _session = s
    return s


def current() -> Session | None:
    return _session


def finalize(path: str | None = None) -> Profile:
    """Stop profiling and return the profile (saved to ``path`` when given)."""
    global _session
    if _session is None:
        raise UsageError("no kernelscope profile is running; call start() first")
    s, _session = _session, None
    profile = s.finalize()
    if path:
        profile.save(path)
    return profile


def activate() -> None:
    """Resume recording (after deactivate())."""
    if _session is not None:
        _session.activate()


def deactivate() -> None:
    """Pause recording; what runs until activate() is skipped, the session continues."""
    if _session is not None:
        _session.deactivate()


def step() -> None:
    """Mark the end of a training/inference step: ``skip_first``, ``steps`` and ``schedule`` count these,
    and events are folded here when a fold is due. Call it between steps, outside any ``record_function``."""
    if _session is not None:
        _session.step()


@contextlib.contextmanager
def scope(name: str, metrics: dict[str, float] | None = None) -> Iterator[None]:
    """A named region in the tree; ``metrics`` (e.g. tokens, samples) become columns
    that derived views can divide by (``-m time_ns/tokens``)."""
    if _session is None or not _session.scope_enter(name, metrics):
        yield
        return
    from torch.profiler import record_function

    with record_function(name):
        yield


class profile(contextlib.ContextDecorator):
    """Context manager and decorator: profile what runs inside, save to ``path`` if given.

    After the block, ``.result`` holds the Profile.
    """

    def __init__(self, path: str | None = None, *, skip_first: int = 0, **options: Any) -> None:
        self.path = path
        self.skip_first = skip_first
        self.options = options
        self.result: Profile | None = None

    def __enter__(self) -> profile:
        start(skip_first=self.skip_first, **self.options)
        return self

    def __exit__(self, *exc: object) -> None:
        self.result = finalize(self.path)

    def _repr_html_(self) -> str | None:
        """In a notebook, after the block: the profile (kernelscope.notebook)."""
        return None if self.result is None else self.result._repr_html_()

    def __call__(self, func: F) -> F:  # type: ignore[override]
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with profile(self.path, skip_first=self.skip_first, **self.options) as p:
                out = func(*args, **kwargs)
            self.result = p.result
            return out

        return wrapper  # type: ignore[return-value]
