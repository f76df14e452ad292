"""``history add``: one run per profile, with where it came from (git, host, devices, command, labels)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..analysis.per_step import series_scale_of, steps_of
from ..errors import KernelscopeError, UsageError
from ..model import Profile
from ..model.io import from_bytes, to_bytes
from ..store.keys import BYS, keyed_rows
from ..store.schema import METRICS, SCHEMA_VERSION
from .db import open_history
from .series import assign, pairs


@dataclass(frozen=True)
class RunInfo:
    """What a run is keyed by, besides its rows."""

    started: float
    git_commit: str | None
    branch: str | None
    host: str | None
    devices: list[Any] = field(default_factory=list)
    command: list[str] = field(default_factory=list)
    profile: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)


def parse_labels(items: Sequence[str]) -> dict[str, str]:
    labels: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"--label {item!r}: give it as KEY=VALUE")
        labels[name.strip()] = value.strip()
    return labels


def _git(*args: str) -> str | None:
    try:
        r = subprocess.run(["git", *args], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    out = r.stdout.strip()
    return out if r.returncode == 0 and out else None


def git_state() -> tuple[str | None, str | None]:
    """(commit, branch) of the working tree in the current folder; (None, None) outside git."""
    commit = _git("rev-parse", "HEAD")
    branch = _git("rev-parse", "--abbrev-ref", "HEAD") if commit else None
    return commit, (None if branch == "HEAD" else branch)


def run_info(profile: Profile, path: str | None, labels: Mapping[str, str]) -> RunInfo:
    md = profile.metadata
    commit, branch = git_state()
    started = md.get("start_time")
    if not isinstance(started, (int, float)):
        started = os.path.getmtime(path) if path and os.path.exists(path) else time.time()
    command = md.get("command")
    return RunInfo(
        started=float(started),
        git_commit=commit or (md.get("git_commit") if isinstance(md.get("git_commit"), str) else None),
        branch=branch,
        host=md.get("host") if isinstance(md.get("host"), str) else socket.gethostname(),
        devices=list(md.get("devices") or []),
        command=[str(c) for c in command] if isinstance(command, list) else [],
        profile=os.path.abspath(path) if path else None,
        labels=dict(labels),
    )


def _program(info: RunInfo) -> str:
    """What makes two runs the same program: their command line."""
    return json.dumps(info.command)


def _anchor(con: Any, program: str) -> tuple[int, Profile] | None:
    """The program's newest run and its stored profile; None before its first run or when unreadable."""
    row = con.execute("SELECT run_id, profile FROM anchors WHERE program = ?", [program]).fetchone()
    if row is None:
        return None
    try:
        return int(row[0]), from_bytes(bytes(row[1]), f"anchor of run {row[0]}")
    except KernelscopeError:
        return None  # pair by name instead


def _known(con: Any) -> dict[str, dict[str, str]]:
    """Per grouping: every series → its newest name."""
    known: dict[str, dict[str, str]] = {by: {} for by in BYS}
    for by, series, name in con.execute(
        'SELECT "by", series, arg_max(key, run_id) FROM rows WHERE series IS NOT NULL GROUP BY "by", series'
    ).fetchall():
        known.setdefault(by, {})[series] = name
    return known


def _with_series(
    con: Any,
    rows: pa.Table,
    profile: Profile,
    prev: tuple[int, Profile] | None,
    known: dict[str, dict[str, str]],
    run_id: int,
) -> pa.Table:
    prev_series: dict[str, dict[str, str]] = {by: {} for by in BYS}
    if prev is not None:
        for by, key, series in con.execute(
            'SELECT "by", key, series FROM rows WHERE run_id = ? AND series IS NOT NULL', [prev[0]]
        ).fetchall():
            prev_series.setdefault(by, {})[key] = series
    by_col = rows.column("by").to_pylist()
    key_col = rows.column("key").to_pylist()
    out: list[str | None] = [None] * len(key_col)
    for by in BYS:
        idx = [i for i, b in enumerate(by_col) if b == by]
        paired = pairs(prev[1], profile, by) if prev is not None else None
        assigned = assign([key_col[i] for i in idx], paired, prev_series[by], known.setdefault(by, {}), run_id)
        for i, s in zip(idx, assigned, strict=True):
            out[i] = s
    return rows.append_column("series", pa.array(out, pa.string()))


def _per_step(rows: pa.Table, profile: Profile) -> pa.Table:
    """A run that recorded whole steps is stored per step (``analysis.per_step``), so that a sample of steps
    and a complete run, or runs of different lengths, compare."""
    factor = series_scale_of(profile.metadata).factor
    if factor == 1.0:
        return rows
    for i, name in enumerate(rows.column_names):
        if name in METRICS:
            rows = rows.set_column(i, name, pc.multiply(rows.column(name), factor))
    return rows


def add_runs(db: str, runs: Sequence[tuple[Profile, RunInfo]]) -> list[int]:
    """Store each (profile, info) as a run; returns the new run ids. All or nothing.

    Each run's keys get their series (``history.series``): paired with the program's previous run.
    """
    # before taking the lock: the rows, and each profile without its timeline for the next run to pair with
    tables = [_per_step(pa.concat_tables([keyed_rows(p, by) for by in BYS]), p) for p, _ in runs]
    blobs = [to_bytes(p.replace(timeline=None)) for p, _ in runs]
    ids: list[int] = []
    with open_history(db, write=True) as con:
        con.execute("BEGIN")
        try:
            first = int(con.execute("SELECT coalesce(max(id), 0) + 1 FROM runs").fetchone()[0])
            known = _known(con)
            anchors: dict[str, tuple[int, Profile] | None] = {}
            for n, ((profile, info), rows, blob) in enumerate(zip(runs, tables, blobs, strict=True)):
                run_id = first + n
                steps = steps_of(profile.metadata)
                program = _program(info)
                prev = anchors[program] if program in anchors else _anchor(con, program)
                rows = _with_series(con, rows, profile, prev, known, run_id)
                con.execute(
                    "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        run_id,
                        info.started,
                        time.time(),
                        info.git_commit,
                        info.branch,
                        info.host,
                        json.dumps(info.devices, default=str),
                        json.dumps(info.command),
                        info.profile,
                        SCHEMA_VERSION,
                        steps.recorded or None,
                        steps.total or None,
                    ],
                )
                for name, value in info.labels.items():
                    con.execute("INSERT INTO labels VALUES (?, ?, ?)", [run_id, name, value])
                con.register("new_rows", rows)
                con.execute(
                    'INSERT INTO rows SELECT ?, "by", key, time_ns, cpu_time_ns, count, flops, bytes, series '
                    "FROM new_rows",
                    [run_id],
                )
                con.unregister("new_rows")
                con.execute("DELETE FROM anchors WHERE program = ?", [program])
                con.execute("INSERT INTO anchors VALUES (?, ?, ?)", [program, run_id, blob])
                anchors[program] = (run_id, profile)
                ids.append(run_id)
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    return ids


__all__ = ["RunInfo", "add_runs", "git_state", "parse_labels", "run_info"]
