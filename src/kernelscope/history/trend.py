"""``history trend`` and ``history show``: a key's series over runs, and which keys changed most."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .gate import pct_change
from .query import Matrix


@dataclass(frozen=True)
class Trend:
    key: str | None
    before: float  # median over the older half of the runs
    after: float  # median over the newer half
    change_pct: float
    series: tuple[float, ...]  # oldest first
    was: tuple[str, ...] = ()  # the key's older names in these runs (a line that moved), oldest first
    not_recorded: str | None = None  # "before"/"after": every run of that half is a sample of steps without it

    def to_json(self) -> dict[str, Any]:
        moved = {"was": list(self.was)} if self.was else {}
        return {
            "key": self.key,
            **moved,
            "before": self.before,
            "after": self.after,
            "change": self.after - self.before,
            "change_pct": None if self.not_recorded else (self.change_pct if np.isfinite(self.change_pct) else "inf"),
            **({"not_recorded": self.not_recorded} if self.not_recorded else {}),
            "series": list(self.series),
        }


def trends(m: Matrix) -> list[Trend]:
    """Every key, the largest absolute change (newer half of the runs vs the older half) first."""
    n = len(m.run_ids)
    half = n // 2
    out: list[Trend] = []
    for k, key in enumerate(m.keys):
        row = m.values[k]
        held = m.held(k)  # (a sample of steps without the key says nothing about it)
        older, newer = row[: max(half, 1)][held[: max(half, 1)]], row[half:][held[half:]]
        before = float(np.median(older)) if len(older) else 0.0
        after = float(np.median(newer)) if len(newer) else 0.0
        missing = None if not n or (len(older) and len(newer)) else ("before" if not len(older) else "after")
        change = 0.0 if missing else float(pct_change(before, after))
        was = m.was[k] if m.was else ()
        out.append(Trend(key, before, after, change, tuple(float(v) for v in row), was, missing))
    out.sort(key=lambda t: (-abs(t.after - t.before), t.key is None, t.key or ""))
    return out


def find_key(m: Matrix, wanted: str) -> int:
    """The series named ``wanted`` (its newest name, else an older one), else the one whose name ends with it,
    else the one whose name contains it; its index in ``m``."""
    from ..errors import UsageError

    exact = [k for k, key in enumerate(m.keys) if key == wanted]
    if exact:
        return exact[0]
    older = sorted({k for k, names in enumerate(m.was) if wanted in names})
    if len(older) == 1:
        return older[0]
    for pick in (lambda k: k.endswith(wanted), lambda k: wanted in k):
        hit = sorted(
            {k for k, key in enumerate(m.keys) if key is not None and pick(key)}, key=lambda k: m.keys[k] or ""
        )
        if len(hit) == 1:
            return hit[0]
        if len(hit) > 1:
            names = [m.keys[k] or "" for k in hit]
            shown = ", ".join(names[:5]) + (" ..." if len(names) > 5 else "")
            raise UsageError(f"{wanted!r} matches {len(hit)} keys ({shown}); give more of it")
    if len(older) > 1:
        shown = ", ".join(m.keys[k] or "" for k in older[:5])
        raise UsageError(f"{wanted!r} was the name of {len(older)} keys ({shown}); give the newest name")
    raise UsageError(
        f"no key {wanted!r} in the history for this grouping (kernelscope history trend --by ... lists keys)"
    )


__all__ = ["Trend", "find_key", "trends"]
