"""A killed run still leaves its profile: the live session checkpoints what it has folded.

SIGKILL, an out-of-memory kill or ``os._exit`` end the process with no chance to save. So after a window
is folded, the profile so far (the tree the folder keeps complete between windows) is written to the
run's output file, atomically (temporary file in the same folder, then ``os.replace``: a kill mid-write
leaves the previous checkpoint whole). It is marked ``ended_abruptly`` in its metadata — "recorded up to"
a time, after so many windows — and the view's header says so; the normal end of the run overwrites it
with the complete profile, without the mark.

The cost is bounded by a pure policy (``due``): at most one write per ``min_interval_s``, and the time
spent writing at most ``max_share`` of the time spent folding (the first write is free of the share, so
a short run is covered too). The hook in the session is one call after each fold; it returns the seconds
spent. They are not charged to the session's overhead budget (a short run's first write, which also
gathers the run's metadata, would push it into sampling); the final profile's ``checkpoints`` metadata
says what they cost (``summary``).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from ..model import Profile
from ..model.io import to_bytes
from ..model.profile import prune_empty

if TYPE_CHECKING:
    from .live_metadata import LiveRun

ENDED_ABRUPTLY = "ended_abruptly"


@dataclass(frozen=True)
class CheckpointPolicy:
    min_interval_s: float = 2.0
    max_share: float = 0.25


@dataclass(frozen=True)
class Spent:
    """What checkpointing has cost so far: the policy's snapshot."""

    writes: int = 0
    seconds: float = 0.0
    last_at: float | None = None


def due(policy: CheckpointPolicy, spent: Spent, now: float, fold_seconds: float) -> bool:
    """Write a checkpoint now? The first one always; later ones when the interval has passed and the
    writes so far cost at most ``max_share`` of the folding so far."""
    if spent.last_at is None:
        return True
    if now - spent.last_at < policy.min_interval_s:
        return False
    return spent.seconds <= policy.max_share * fold_seconds


def abrupt_mark(wall_start: float, windows: int, steps: int, now_wall: float | None = None) -> dict[str, Any]:
    """The metadata of a checkpoint: how far it got, for the header and ``--json``."""
    now_wall = time.time() if now_wall is None else now_wall
    return {
        "recorded_up_to": datetime.fromtimestamp(now_wall, tz=timezone.utc).isoformat(timespec="seconds"),
        "after_seconds": round(max(now_wall - wall_start, 0.0), 3) if wall_start else None,
        "windows": windows,
        "steps": steps,
    }


def abrupt_note(metadata: dict[str, Any]) -> str | None:
    """``ended abruptly: recorded up to …`` for a checkpointed profile, else None."""
    mark = metadata.get(ENDED_ABRUPTLY)
    if not isinstance(mark, dict):
        return None
    up_to = str(mark.get("recorded_up_to", "?"))
    after = mark.get("after_seconds")
    windows = mark.get("windows")
    parts = [f"ended abruptly: recorded up to {up_to}"]
    if isinstance(after, (int, float)) and not isinstance(after, bool):
        parts.append(f"{after:g} s into the run")
    if isinstance(windows, int) and not isinstance(windows, bool):
        parts.append(f"{windows} window{'s' if windows != 1 else ''} folded")
    return ", ".join(parts) + " (the process was killed; later work is missing)"


class Checkpoint:
    """Writes the session's profile-so-far to ``path`` after folds, as the policy allows."""

    def __init__(
        self,
        path: str,
        policy: CheckpointPolicy | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.path = os.path.abspath(path)
        self.policy = policy or CheckpointPolicy()
        self.clock = clock
        self.spent = Spent()
        self.failed: str | None = None  # why the last write failed (the final save reports its own)
        self._run: dict[str, Any] | None = None  # the run's fixed metadata, computed at the first write

    def folded(self, session: LiveRun) -> float:
        """After a window is folded: write a checkpoint when due. Returns the seconds spent."""
        now = self.clock()
        if not due(self.policy, self.spent, now, session.fold_time):
            return 0.0
        if self._run is None:
            from .live_metadata import run_metadata

            self._run = run_metadata()
        self.write(_snapshot(session, self._run))
        end = self.clock()
        self.spent = Spent(self.spent.writes + 1, self.spent.seconds + end - now, end)
        return end - now

    def summary(self) -> dict[str, Any]:
        """What checkpointing cost this run (the final profile's ``checkpoints`` metadata)."""
        out: dict[str, Any] = {"writes": self.spent.writes, "seconds": round(self.spent.seconds, 4)}
        if self.failed:
            out["failed"] = self.failed
        return out

    def write(self, profile: Profile) -> None:
        """Atomically (temporary file, then ``os.replace``), without ``fsync``: a checkpoint must outlive the
        process, which the page cache does; the final save is the durable one."""
        folder = os.path.dirname(self.path)
        tmp = None
        try:
            fd, tmp = tempfile.mkstemp(prefix=".ksprof-", suffix=".tmp", dir=folder)
            with os.fdopen(fd, "wb") as fh:
                fh.write(to_bytes(profile))
            os.chmod(tmp, 0o666 & ~_umask())
            os.replace(tmp, self.path)
            self.failed = None
        except OSError as exc:  # a full disk must not stop the program: the final save says what failed
            self.failed = exc.strerror or type(exc).__name__
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)


def _snapshot(session: LiveRun, run: dict[str, Any]) -> Profile:
    """The profile so far, without stopping anything (the builder is copied, not consumed)."""
    from .live_metadata import session_metadata

    try:
        metadata = session_metadata(session, run)
    except Exception as exc:  # mid-run some figures may not be ready: keep what identifies the run
        metadata = {"tool": "kernelscope", "source": {"format": "torch-live"}, "command": session.argv}
        metadata["warnings"] = [f"checkpoint metadata incomplete ({type(exc).__name__})"]
    metadata[ENDED_ABRUPTLY] = abrupt_mark(_wall_start(session), session.windows, session.steps)
    # (the windows taken in so far: one still folding in the background, or waiting its turn, is not waited for;
    # read through ``session.builder`` the checkpoint after a child's window folded the next one in the program)
    b = session.recorder.folder.builder
    for metric in ("time_ns", "cpu_time_ns", "count"):
        b.ensure_metric(metric)
    return prune_empty(b.build(metadata))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _wall_start(session: LiveRun) -> float:
    value = getattr(session, "start_time", 0.0)
    with contextlib.suppress(TypeError, ValueError):
        return float(value)
    return 0.0
