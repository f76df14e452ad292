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

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "before": self.before,
            "after": self.after,
            "change": self.after - self.before,
            "change_pct": self.change_pct if np.isfinite(self.change_pct) else "inf",
            "series": list(self.series),
        }


def trends(m: Matrix) -> list[Trend]:
    """Every key, the largest absolute change (newer half of the runs vs the older half) first."""
    n = len(m.run_ids)
    half = n // 2
    out: list[Trend] = []
    for k, key in enumerate(m.keys):
        row = m.values[k]
        before = float(np.median(row[: max(half, 1)])) if n else 0.0
        after = float(np.median(row[half:])) if n else 0.0
        out.append(Trend(key, before, after, float(pct_change(before, after)), tuple(float(v) for v in row)))
    out.sort(key=lambda t: (-abs(t.after - t.before), t.key is None, t.key or ""))
    return out


def find_key(keys: list[str | None] | tuple[str | None, ...], wanted: str) -> str:
    """``wanted`` itself, else the one key that ends with it, else the one that contains it."""
    named = [k for k in keys if k is not None]
    if wanted in named:
        return wanted
    for pick in (lambda k: k.endswith(wanted), lambda k: wanted in k):
        hit = sorted({k for k in named if pick(k)})
        if len(hit) == 1:
            return hit[0]
        if len(hit) > 1:
            from ..errors import UsageError

            shown = ", ".join(hit[:5]) + (" ..." if len(hit) > 5 else "")
            raise UsageError(f"{wanted!r} matches {len(hit)} keys ({shown}); give more of it")
    from ..errors import UsageError

    raise UsageError(
        f"no key {wanted!r} in the history for this grouping (kernelscope history trend --by ... lists keys)"
    )


__all__ = ["Trend", "find_key", "trends"]
