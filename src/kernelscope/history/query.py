"""Reading the history: runs, which runs a REF names, and one metric's values per key and run."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import UsageError
from ..store.keys import BYS
from ..store.schema import METRICS

METRIC_ALIASES = {
    "time": "time_ns",
    "ms": "time_ns",
    "time/ms": "time_ns",
    "cpu": "cpu_time_ns",
    "cpu/ms": "cpu_time_ns",
}


def metric_name(metric: str) -> str:
    name = METRIC_ALIASES.get(metric, metric)
    if name not in METRICS:
        raise UsageError(f"unknown metric {metric!r}; choose one of: time/ms, cpu/ms, {', '.join(METRICS)}")
    return name


def check_by(by: str) -> str:
    if by not in BYS:
        raise UsageError(f"unknown grouping {by!r}; choose one of: {', '.join(BYS)}")
    return by


@dataclass(frozen=True)
class Run:
    id: int
    started: float
    git_commit: str | None
    branch: str | None
    host: str | None
    command: tuple[str, ...]
    labels: tuple[tuple[str, str], ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "started": self.started,
            "git_commit": self.git_commit,
            "branch": self.branch,
            "host": self.host,
            "command": list(self.command),
            "labels": dict(self.labels),
        }


def runs(con: Any, ids: list[int] | None = None) -> list[Run]:
    """Runs oldest first (by start time, then id); only ``ids`` when given."""
    rows = con.execute(
        "SELECT id, started, git_commit, branch, host, command FROM runs ORDER BY started, id"
    ).fetchall()
    labels: dict[int, list[tuple[str, str]]] = {}
    for run_id, name, value in con.execute("SELECT run_id, name, value FROM labels ORDER BY name").fetchall():
        labels.setdefault(int(run_id), []).append((name, value))
    wanted = None if ids is None else set(ids)
    return [
        Run(int(i), float(s), c, b, h, tuple(json.loads(cmd)), tuple(labels.get(int(i), [])))
        for i, s, c, b, h, cmd in rows
        if wanted is None or int(i) in wanted
    ]


@dataclass(frozen=True)
class Selection:
    """The runs a REF names, oldest first, and how it was read."""

    ref: str
    how: str
    runs: tuple[Run, ...]

    @property
    def ids(self) -> list[int]:
        return [r.id for r in self.runs]


def _git_commit(ref: str) -> str | None:
    try:
        r = subprocess.run(
            ["git", "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    out = r.stdout.strip()
    return out if r.returncode == 0 and out else None


def select(con: Any, ref: str) -> Selection:
    """REF: ``K=V`` (label), a run id, a branch (its newest commit's runs), a commit or its prefix, a git revision."""
    every = runs(con)
    if "=" in ref:
        name, _, value = ref.partition("=")
        hit = [r for r in every if (name.strip(), value.strip()) in r.labels]
        return _found(ref, f"label {name.strip()}={value.strip()}", hit)
    if ref.isdigit() and any(r.id == int(ref) for r in every):
        return _found(ref, f"run {ref}", [r for r in every if r.id == int(ref)])
    on_branch = [r for r in every if r.branch == ref]
    if on_branch:
        newest = on_branch[-1].git_commit
        hit = [r for r in on_branch if r.git_commit == newest]
        return _found(ref, f"branch {ref} at {(newest or '?')[:12]}", hit)
    if len(ref) >= 4:
        hit = [r for r in every if r.git_commit and r.git_commit.startswith(ref.lower())]
        if len({r.git_commit for r in hit}) > 1:
            raise UsageError(f"{ref!r} is the start of several commits in the history; give more of it")
        if hit:
            return _found(ref, f"commit {(hit[0].git_commit or '')[:12]}", hit)
    full = _git_commit(ref)
    if full:
        return _found(ref, f"{ref} = commit {full[:12]}", [r for r in every if r.git_commit == full])
    return _found(ref, ref, [])


def _found(ref: str, how: str, hit: list[Run]) -> Selection:
    if not hit:
        raise UsageError(
            f"no run in the history matches {ref!r} (a commit, branch, run id or label K=V; see kernelscope history list)"
        )
    return Selection(ref, how, tuple(hit))


@dataclass(frozen=True)
class Matrix:
    """One metric of one grouping: ``values[k, j]`` is series ``series[k]`` in run ``run_ids[j]`` (0 where absent).

    A series is one key followed over the runs (``history.series``): ``keys[k]`` is its name in the newest of
    these runs that has it, ``was[k]`` its other names in these runs, oldest first (a line that moved).
    """

    by: str
    metric: str
    run_ids: tuple[int, ...]
    keys: tuple[str | None, ...]
    values: np.ndarray
    totals: np.ndarray  # per run: the sum over every key, the null key included
    series: tuple[str | None, ...] = ()
    was: tuple[tuple[str, ...], ...] = ()
    cells: dict[tuple[int, int], str | None] = field(default_factory=dict)  # (k, j) → the key in run j
    sampled: tuple[bool, ...] = ()  # per run: a live sample of whole steps (a key it lacks may run in others)

    def held(self, k: int) -> np.ndarray:
        """Per run: whether its value of series ``k`` is measured, i.e. the run holds the key or is no
        sample of steps (a sample that lacks it says nothing: the key is not in its recorded steps)."""
        return np.asarray(
            [(k, j) in self.cells or not (self.sampled and self.sampled[j]) for j in range(len(self.run_ids))],
            dtype=bool,
        )

    def name_in(self, k: int, j: int) -> str | None:
        """Series ``k``'s key in run ``run_ids[j]`` (None where absent)."""
        return self.cells.get((k, j))

    def moved_from(self, k: int) -> str | None:
        """The series' previous name in these runs, where it had one."""
        return self.was[k][-1] if self.was and self.was[k] else None


def matrix(con: Any, run_ids: list[int], by: str, metric: str) -> Matrix:
    if metric not in METRICS:
        raise UsageError(f"unknown metric {metric!r}")
    rows = con.execute(
        f'SELECT run_id, series, key, {metric} FROM rows WHERE "by" = ? AND run_id IN (SELECT unnest(?::BIGINT[])) ',
        [by, run_ids],
    ).fetchall()
    col = {r: j for j, r in enumerate(run_ids)}
    rows.sort(key=lambda r: (col[int(r[0])], r[1] is not None, r[1] or "", r[2] or ""))  # oldest run first
    index: dict[str | None, int] = {}
    names: list[list[str | None]] = []
    last: list[int] = []  # per series: the newest run (column) that has it
    cells: dict[tuple[int, int], str | None] = {}
    for run_id, series, key, _ in rows:
        s = series if series is not None else key
        k = index.setdefault(s, len(index))
        if k == len(names):
            names.append([])
            last.append(0)
        last[k] = col[int(run_id)]
        if key not in names[k]:
            names[k].append(key)
        else:  # newest last
            names[k].remove(key)
            names[k].append(key)
        cells[(k, col[int(run_id)])] = key
    values = np.zeros((len(index), len(run_ids)), dtype=np.float64)
    for run_id, series, key, value in rows:
        values[index[series if series is not None else key], col[int(run_id)]] += float(value)
    keys = _unique([n[-1] for n in names], last, run_ids)
    was = tuple(tuple(str(x) for x in n[:-1] if x is not None) for n in names)
    steps = dict(
        con.execute(
            "SELECT id, recorded_steps < steps FROM runs WHERE id IN (SELECT unnest(?::BIGINT[]))", [run_ids]
        ).fetchall()
    )
    sampled = tuple(bool(steps.get(r)) for r in run_ids)
    totals = values.sum(axis=0)
    return Matrix(by, metric, tuple(run_ids), tuple(keys), values, totals, tuple(index), was, cells, sampled)


def _unique(names: list[str | None], last: list[int], run_ids: list[int]) -> list[str | None]:
    """Names as they are, except where two series share one (a line moved away and another took its place):
    the series seen last keeps it, the others are ``NAME (until run N)``."""
    newest: dict[str | None, int] = {}
    for n, j in zip(names, last, strict=True):
        newest[n] = max(newest.get(n, -1), j)
    return [
        n if n is None or newest[n] == j else f"{n} (until run {run_ids[j]})" for n, j in zip(names, last, strict=True)
    ]


__all__ = ["METRIC_ALIASES", "Matrix", "Run", "Selection", "check_by", "matrix", "metric_name", "runs", "select"]
