"""Series: the identity a key keeps over the runs of a program, so that a line that moved keeps its history.

When a run is added, its keys are paired with those of the same program's previous run (same command line)
by ``kernelscope diff``'s own matching (:func:`kernelscope.analysis.diff.diff`): lines by function and
content, so a line that moved because code above it changed meets its counterpart. The other groupings'
keys are already the normalised identities ``diff`` matches on (kernel names without hashes and numeric
suffixes, so a renamed Inductor kernel is the same key), so they pair by equality.

A paired key takes its counterpart's series. An unpaired key takes the series whose newest name it is,
when this run has not claimed that series yet (a line absent from the previous run, or history from before
series existed); otherwise it starts a new series named by the key (``KEY@RUN`` when that name is taken).
The null key has no series.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..analysis.diff import diff
from ..model import Profile


def pairs(prev: Profile, new: Profile, by: str) -> dict[str, str] | None:
    """New key → the previous run's key ``diff`` pairs it with (itself, unless the line moved).

    None for the groupings whose keys pair by equality (every one but ``line``).
    """
    if by != "line":
        return None
    out: dict[str, str] = {}
    for row in diff(prev, new, by="line").rows:
        if row.key is not None and row.base and row.new:
            out[row.key] = row.base_key or row.key
    return out


def assign(
    keys: Sequence[str | None],
    paired: Mapping[str, str] | None,
    prev_series: Mapping[str, str],
    known: dict[str, str],
    run_id: int,
) -> list[str | None]:
    """The series of each of a new run's ``keys`` (largest first: the first claim wins).

    ``paired``: new key → previous key (:func:`pairs`; None: equal keys pair, as without a previous profile);
    ``prev_series``: the previous run's key → series; ``known``: every series of this grouping → its
    newest name, updated in place with this run's names.
    """
    by_name: dict[str, list[str]] = {}
    for s, name in known.items():
        by_name.setdefault(name, []).append(s)
    claimed: set[str] = set()
    out: dict[str, str] = {}
    for k in keys:
        if k is None:
            continue
        p = k if paired is None else paired.get(k)
        had = prev_series.get(p) if p is not None else None
        if had is not None and had not in claimed:
            out[k] = had
            claimed.add(had)
    for k in keys:
        if k is None or k in out:
            continue
        named = next((c for c in sorted(by_name.get(k, []), key=lambda c: (c != k, c)) if c not in claimed), None)
        if named is not None:
            s = named
        else:
            s, n = k, 1
            while s in known or s in claimed:
                s = f"{k}@{run_id}" + (f".{n}" if n > 1 else "")
                n += 1
        out[k] = s
        claimed.add(s)
    for k, s in out.items():
        known[s] = k
    return [None if k is None else out[k] for k in keys]


__all__ = ["assign", "pairs"]
