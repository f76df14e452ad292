"""``history gate``: which keys got slower between two sets of runs, beyond a threshold and beyond the noise.

Per key, the change is the relative change of the medians over the runs of each side. With repeated
runs the key is flagged only when that change exceeds ``--fail-above``, a one-sided Mann–Whitney U test
(new greater than base) gives p < ``ALPHA``, *and* the lower end of a percentile bootstrap interval (95 %)
of the change of medians exceeds ``--fail-above`` too: the change is above the threshold beyond the noise,
not only at its median (a machine that drifts during identical runs moved one op +19% at p = 0.016, but
its interval began at +2.7%). When the run counts cannot reach ``ALPHA`` at all (one run on a side, or two
and two) the gate says so and falls back to the threshold alone. As in ``diff``, a key whose growth is
below ``--noise-floor`` percent of the base total never fails. Keys are compared by series
(``history.series``): a line that moved between the sides is one key, named as in the new runs.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from .query import Matrix, Selection

ALPHA = 0.05
BOOTSTRAP_RESAMPLES = 2000
CONFIDENCE = 0.95
TEST_NAME = "one-sided Mann-Whitney U (new > base)"


@dataclass(frozen=True)
class KeyChange:
    key: str | None
    base: float  # median over the base runs
    new: float
    change_pct: float  # inf: absent from every base run
    low_pct: float | None  # bootstrap interval of change_pct; None with a single run per side
    high_pct: float | None
    p_value: float | None  # None when the test cannot reach ALPHA with these run counts
    flagged: bool
    base_key: str | None = None  # the key's name in the base runs, where it differs (a line that moved)
    not_recorded: str | None = None  # "base"/"new": every run of that side is a sample of steps without the key

    def to_json(self) -> dict[str, Any]:
        moved = {} if self.base_key is None else {"base_key": self.base_key}
        unrecorded = {} if self.not_recorded is None else {"not_recorded": self.not_recorded}
        return {
            "key": self.key,
            **moved,
            **unrecorded,
            "base": self.base,
            "new": self.new,
            "change_pct": None if self.not_recorded else _finite(self.change_pct),
            "interval_pct": None if self.low_pct is None else [_finite(self.low_pct), _finite(self.high_pct)],
            "p_value": self.p_value,
            "flagged": self.flagged,
        }


def _finite(x: float | None) -> float | str | None:
    if x is None:
        return None
    return x if math.isfinite(x) else ("inf" if x > 0 else "-inf")


@dataclass(frozen=True)
class GateResult:
    by: str
    metric: str
    base: Selection
    new: Selection
    fail_above_pct: float
    noise_floor_pct: float
    noise_floor: float  # in the metric's unit: noise_floor_pct of the median base total
    tested: bool  # False: the run counts cannot reach ALPHA, threshold only
    method: str
    changes: tuple[KeyChange, ...]  # every key, largest growth first

    @property
    def flagged(self) -> list[KeyChange]:
        return [c for c in self.changes if c.flagged]

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": 1,
            "by": self.by,
            "metric": self.metric,
            "base": {"ref": self.base.ref, "how": self.base.how, "runs": self.base.ids},
            "new": {"ref": self.new.ref, "how": self.new.how, "runs": self.new.ids},
            "fail_above_pct": self.fail_above_pct,
            "noise_floor_pct": self.noise_floor_pct,
            "noise_floor": self.noise_floor,
            "test": TEST_NAME if self.tested else None,
            "alpha": ALPHA if self.tested else None,
            "interval": f"{CONFIDENCE:.0%} bootstrap of the change of medians ({BOOTSTRAP_RESAMPLES} resamples)",
            "method": self.method,
            "tripped": bool(self.flagged),
            "flagged": [c.to_json() for c in self.flagged],
            "keys": [c.to_json() for c in self.changes],
        }


def smallest_p(n_base: int, n_new: int) -> float:
    """The smallest one-sided Mann–Whitney p-value these run counts allow (every new run above every base run)."""
    return 1.0 / math.comb(n_base + n_new, n_base)


def pct_change(base: np.ndarray | float, new: np.ndarray | float) -> Any:
    base = np.asarray(base, dtype=np.float64)
    new = np.asarray(new, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(base > 0, (new - base) / np.where(base > 0, base, 1.0) * 100.0, np.where(new > 0, np.inf, 0.0))
    return out


def _bootstrap(base: np.ndarray, new: np.ndarray, rng: np.random.Generator) -> tuple[float, float]:
    b = np.median(base[rng.integers(0, len(base), (BOOTSTRAP_RESAMPLES, len(base)))], axis=1)
    n = np.median(new[rng.integers(0, len(new), (BOOTSTRAP_RESAMPLES, len(new)))], axis=1)
    pct = pct_change(b, n)
    tail = (1.0 - CONFIDENCE) / 2 * 100
    with np.errstate(invalid="ignore"):  # resamples whose base median is 0 are +inf
        lo, hi = np.percentile(pct, [tail, 100 - tail], method="lower")
    return float(lo), float(hi)


def _measured(m: Matrix, k: int | None) -> np.ndarray:
    """Series ``k``'s values in the runs that measured it (``Matrix.held``); ``None``: a key no run of this
    side holds, 0 in each run that is no sample of steps."""
    if k is not None:
        return np.asarray(m.values[k][m.held(k)])
    return np.zeros(sum(1 for j in range(len(m.run_ids)) if not (m.sampled and m.sampled[j])))


def gate(
    base: Matrix, new: Matrix, base_sel: Selection, new_sel: Selection, fail_above_pct: float, noise_floor_pct: float
) -> GateResult:
    from scipy.stats import mannwhitneyu

    nb, nn = len(base.run_ids), len(new.run_ids)
    tested = smallest_p(nb, nn) < ALPHA
    if tested:
        method = (
            f"{TEST_NAME}, alpha {ALPHA:g}, over {nb} base and {nn} new runs, and change > {fail_above_pct:g}% "
            f"over its whole {CONFIDENCE:.0%} interval"
        )
    elif nb == 1 and nn == 1:
        method = f"single run per side: threshold only (change > {fail_above_pct:g}%), no noise test"
    else:
        method = (
            f"{nb} base and {nn} new runs cannot reach alpha {ALPHA:g} (smallest p {smallest_p(nb, nn):.3f}): "
            f"threshold only (change > {fail_above_pct:g}%)"
        )
    # keys are matched by series: a line that moved between the sides is one key, named as in the new runs
    b_ids, n_ids = base.series or base.keys, new.series or new.keys
    bi = {s: i for i, s in enumerate(b_ids)}
    ni = {s: i for i, s in enumerate(n_ids)}
    floor = float(np.median(base.totals)) * noise_floor_pct / 100.0 if nb else 0.0
    changes: list[KeyChange] = []
    for s in dict.fromkeys([*b_ids, *n_ids]):
        key = new.keys[ni[s]] if s in ni else base.keys[bi[s]]
        base_key = base.keys[bi[s]] if s in bi and s in ni and base.keys[bi[s]] != key else None
        # a run that is a sample of steps without the key says nothing about it: left out for this key
        b, n = _measured(base, bi.get(s)), _measured(new, ni.get(s))
        if not len(b) or not len(n):
            side = "base" if not len(b) else "new"
            mb, mn = float(np.median(b)) if len(b) else 0.0, float(np.median(n)) if len(n) else 0.0
            changes.append(KeyChange(key, mb, mn, 0.0, None, None, None, False, base_key, side))
            continue
        mb, mn = float(np.median(b)), float(np.median(n))
        change = float(pct_change(mb, mn))
        lo = hi = p = None
        if len(b) > 1 or len(n) > 1:
            rng = np.random.default_rng([20, zlib.crc32((key or "").encode())])  # the same interval every time
            lo, hi = _bootstrap(b, n, rng)
        if tested:
            if len(np.unique(np.concatenate([b, n]))) == 1:
                p = 1.0  # every run the same value: no change to test
            else:
                p = float(mannwhitneyu(n, b, alternative="greater", method="auto").pvalue)
        big = change > fail_above_pct and (mn - mb) > floor
        beyond = lo is None or bool(lo > fail_above_pct)  # (an interval's lower end, +inf for a new key)
        flagged = big and (p is not None and p < ALPHA) and beyond if tested else big
        changes.append(KeyChange(key, mb, mn, change, lo, hi, p, bool(flagged), base_key))
    changes.sort(key=lambda c: (-(c.new - c.base), c.key is None, c.key or ""))
    return GateResult(
        base.by, base.metric, base_sel, new_sel, fail_above_pct, noise_floor_pct, floor, tested, method, tuple(changes)
    )


__all__ = ["ALPHA", "TEST_NAME", "GateResult", "KeyChange", "gate", "pct_change", "smallest_p"]
