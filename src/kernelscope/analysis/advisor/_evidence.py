"""Shared reading of the evidence rules use: spans, lines as (file, line), share and ms formatting."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ...model import FrameKind, Profile
from ..breakdown import breakdown


def ms(ns: float) -> float:
    return round(ns / 1e6, 3)


def split_line(key: str | None) -> tuple[str | None, int | None]:
    """``"path/file.py:42"`` → ``("path/file.py", 42)``; None stays None."""
    if not key:
        return None, None
    file, _, line = key.rpartition(":")
    return (file, int(line)) if file and line.isdigit() else (key, None)


def measured_ms(profile: Profile) -> float:
    """What the savings are measured against: the longest device span, else the total measured time."""
    devices = breakdown(profile).devices
    if devices:
        return max(d.total_ns for d in devices) / 1e6
    return max(profile.total("time_ns"), profile.total("cpu_time_ns")) / 1e6


def time_metric(profile: Profile) -> str:
    return "time_ns" if profile.total("time_ns") > 0 else "cpu_time_ns"


@dataclass(frozen=True)
class LineSite:
    """A user line in the tree: a PYTHON node and the op nodes directly under it."""

    node: int
    file: str
    line: int
    ops: tuple[int, ...]


def line_sites(profile: Profile) -> list[LineSite]:
    """Every PYTHON node with the OP nodes right below it (outside compiled regions)."""
    kids = profile.children
    out: list[LineSite] = []
    in_region = _in_region(profile)
    for node in range(1, len(profile)):
        f = profile.frame_of(node)
        if f.kind is not FrameKind.PYTHON or in_region[node]:
            continue
        ops = tuple(c for c in kids[node] if profile.frame_of(c).kind is FrameKind.OP)
        if ops:
            out.append(LineSite(node, f.file, f.line, ops))
    return out


def _in_region(profile: Profile) -> list[bool]:
    flags = [False] * len(profile)
    par = profile.parent.tolist()
    for node in range(1, len(profile)):
        flags[node] = flags[par[node]] or profile.frame_of(node).kind is FrameKind.REGION
    return flags


@dataclass(frozen=True)
class OpChain:
    """The ops one line runs per execution (``unfused_elementwise``, ``eager_ops``): how many executions, how many
    ops each, their time, and what fusing them would save (their time less the slowest op's)."""

    executions: float
    length: float
    time: float
    saving: float


def op_chain(
    ops: Mapping[str, Sequence[float]], min_length: float, min_ms: float, min_distinct: float = 2
) -> OpChain | None:
    """``ops``: name -> (calls, time in ns) at one line. None when it holds fewer than ``min_distinct`` ops, the
    chain is shorter than ``min_length`` ops per execution, or fusing it saves less than ``min_ms``."""
    calls = [c for c, _ in ops.values() if c > 0]
    if len(ops) < min_distinct or not calls:
        return None
    executions = min(calls)
    length = sum(calls) / executions
    if round(length) < min_length:
        return None
    time = sum(v for _, v in ops.values())
    saving = time - max(v for _, v in ops.values())
    if saving < min_ms * 1e6:
        return None
    return OpChain(executions, length, time, saving)
