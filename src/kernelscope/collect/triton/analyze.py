"""From recorded accesses to per-line totals and problems. Pure functions: inputs are never changed.

Definitions:
- a line's ``bytes``/``elements`` count the lanes its masks let through (out-of-bounds ones included:
  the program asked for them); ``masked_fraction`` is the masked-off share of all its lanes;
- ``out_of_bounds``: an unmasked lane whose element lies outside the storage of the argument the
  pointer was derived from;
- ``race``: one element of an argument stored (not atomically) by two programs of one launch;
- ``uncoalesced``: a load/store line whose lanes touch at least twice the 32-byte sectors that
  contiguous access to the same bytes would need (strided or scattered access wastes the rest).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .records import ATOMIC, DOT, STORE, Access, Launch, Program

OUT_OF_BOUNDS = "out_of_bounds"
RACE = "race"
UNCOALESCED = "uncoalesced"
WASTE_RATIO = 2.0  # sectors touched / sectors needed at which a line is reported
MIN_SECTORS = 4  # per access, below this a line is too small to judge


@dataclass(frozen=True)
class LineStat:
    kernel: str
    file: str
    line: int
    op: str
    bytes: int
    elements: int
    lanes: int
    count: int  # executions of the op, all programs and launches together
    dot_shapes: tuple[tuple[int, int, int], ...] = ()  # (M, N, K) of each distinct tl.dot
    flops: int = 0  # 2·M·N·K per tl.dot executed

    @property
    def masked_fraction(self) -> float:
        return (self.lanes - self.elements) / self.lanes if self.lanes else 0.0


@dataclass(frozen=True)
class Problem:
    kind: str
    kernel: str
    file: str
    line: int
    program_id: Program
    arg: str | None
    detail: str


@dataclass(frozen=True)
class WriteMap:
    """Which program (linear id, -1: none) last stored each element of one argument in one launch."""

    launch: int
    kernel: str
    arg: str
    shape: tuple[int, ...]
    grid: Program
    owner: tuple[int, ...]


def line_stats(launches: list[Launch], accesses: list[Access]) -> list[LineStat]:
    """Totals per (kernel, file, line, op), in order of first execution."""
    acc: dict[tuple[str, str, int, str], list[int]] = {}
    shapes: dict[tuple[str, str, int, str], dict[tuple[int, int, int], int]] = defaultdict(dict)
    for a in accesses:
        key = (launches[a.launch].kernel, a.file, a.line, a.op)
        tot = acc.setdefault(key, [0, 0, 0, 0])
        tot[0] += a.active * a.itemsize
        tot[1] += a.active
        tot[2] += a.lanes
        tot[3] += 1
        if a.dot_shape is not None:
            shapes[key][a.dot_shape] = shapes[key].get(a.dot_shape, 0) + 1
    return [
        LineStat(
            *key,
            bytes=t[0],
            elements=t[1],
            lanes=t[2],
            count=t[3],
            dot_shapes=tuple(shapes.get(key, {})),
            flops=sum(2 * m * n * k * c for (m, n, k), c in shapes.get(key, {}).items()),
        )
        for key, t in acc.items()
    ]


def launch_totals(launches: list[Launch], accesses: list[Access]) -> list[tuple[int, int]]:
    """(bytes, flops) per launch, by launch index: the bytes its loads, stores and atomics moved (lanes
    their masks let through) and 2·M·N·K per ``tl.dot`` executed — the line totals, summed per launch."""
    out = [[0, 0] for _ in launches]
    for a in accesses:
        if not 0 <= a.launch < len(out):
            continue
        if a.dot_shape is not None:
            m, n, k = a.dot_shape
            out[a.launch][1] += 2 * m * n * k
        else:
            out[a.launch][0] += a.active * a.itemsize
    return [(b, f) for b, f in out]


def out_of_bounds(launches: list[Launch], accesses: list[Access]) -> list[Problem]:
    groups: dict[tuple[int, str, int, str | None, str], list[Access]] = {}
    for a in accesses:
        if a.oob:
            groups.setdefault((a.launch, a.file, a.line, a.arg, a.op), []).append(a)
    out: list[Problem] = []
    for (li, file, line, arg, op), group in groups.items():
        launch = launches[li]
        info = launch.arg(arg) if arg is not None else None
        size = ""
        if info is not None:
            size = f" ({info.dtype}{list(info.shape)}, {(info.storage_hi - info.base) // group[0].itemsize} elements from its start to the end of its storage)"
        programs = sorted({a.program for a in group})
        shown = ", ".join(_pid(p) for p in programs[:4]) + (
            f" and {len(programs) - 4} more" if len(programs) > 4 else ""
        )
        detail = (
            f"{op} of {sum(a.oob for a in group)} element(s) outside {arg}{size}; first at element "
            f"{group[0].oob_first}; program(s) {shown}"
        )
        out.append(Problem(OUT_OF_BOUNDS, launch.kernel, file, line, group[0].program, arg, detail))
    return out


def races(launches: list[Launch], accesses: list[Access]) -> list[Problem]:
    by_target: dict[tuple[int, str], list[Access]] = defaultdict(list)
    for a in accesses:
        if a.op == STORE and a.arg is not None and a.elements is not None and a.elements.size:
            by_target[(a.launch, a.arg)].append(a)
    out: list[Problem] = []
    for (li, arg), group in by_target.items():
        launch = launches[li]
        elems = np.concatenate([a.elements for a in group if a.elements is not None])
        prog = np.concatenate(
            [np.full(a.elements.size, launch.linear(a.program)) for a in group if a.elements is not None]
        )
        which = np.concatenate([np.full(a.elements.size, i) for i, a in enumerate(group) if a.elements is not None])
        # columns sorted by (element, program): the programs storing one element are neighbours
        pairs, first = np.unique(np.stack([elems, prog]), axis=1, return_index=True)
        elem_ids, starts, counts = np.unique(pairs[0], return_index=True, return_counts=True)
        racy = counts > 1
        if not bool(racy.any()):
            continue
        s1 = starts[racy]
        racy_elems, p1s, p2s = elem_ids[racy], pairs[1, s1], pairs[1, s1 + 1]
        second_access = which[first[s1 + 1]]  # the second program's (first) store of that element
        # one problem per line of those stores, with its first element as the example
        at_line: dict[tuple[str, int], list[int]] = {}
        for acc_index, k, n in zip(*np.unique(second_access, return_index=True, return_counts=True), strict=True):
            store_ = group[int(acc_index)]
            entry = at_line.setdefault((store_.file, store_.line), [0, int(k)])
            entry[0] += int(n)
            entry[1] = min(entry[1], int(k))
        for (file, line), (n, k) in at_line.items():
            p1, p2 = launch.program_of(int(p1s[k])), launch.program_of(int(p2s[k]))
            detail = (
                f"{n} element(s) of {arg} stored by more than one program without atomics; "
                f"element {int(racy_elems[k])} by programs {_pid(p1)} and {_pid(p2)}"
            )
            out.append(Problem(RACE, launch.kernel, file, line, p2, arg, detail))
    return out


def uncoalesced(launches: list[Launch], accesses: list[Access]) -> list[Problem]:
    lines: dict[tuple[str, str, int, str | None, str], list[Access]] = {}
    for a in accesses:
        if a.op != DOT and a.op != ATOMIC and a.sectors:
            lines.setdefault((launches[a.launch].kernel, a.file, a.line, a.arg, a.op), []).append(a)
    out: list[Problem] = []
    for (kernel, file, line, arg, op), group in lines.items():
        touched = sum(a.sectors for a in group)
        needed = sum(a.min_sectors for a in group)
        if touched < WASTE_RATIO * needed or touched < MIN_SECTORS * len(group):
            continue
        detail = (
            f"{op}s of {arg} touch {touched} 32-byte sectors where contiguous access needs {needed}: "
            f"{needed / touched:.0%} of the fetched bytes are used (strided or scattered lanes)"
        )
        out.append(Problem(UNCOALESCED, kernel, file, line, group[0].program, arg, detail))
    return out


def write_maps(launches: list[Launch], accesses: list[Access], max_elements: int = 1 << 16) -> list[WriteMap]:
    """Per launch and stored argument (up to ``max_elements`` elements): the last writer of each element."""
    owners: dict[tuple[int, str], np.ndarray] = {}
    for a in accesses:
        if a.op not in (STORE, ATOMIC) or a.arg is None or a.elements is None:
            continue
        launch = launches[a.launch]
        info = launch.arg(a.arg)
        if info is None:
            continue
        numel = int(np.prod(info.shape)) if info.shape else 1
        if numel > max_elements:
            continue
        own = owners.get((a.launch, a.arg))
        if own is None:
            own = owners[(a.launch, a.arg)] = np.full(numel, -1, dtype=np.int64)
        idx = a.elements[(a.elements >= 0) & (a.elements < numel)]
        own[idx] = launch.linear(a.program)
    return [
        WriteMap(li, launches[li].kernel, arg, info.shape, launches[li].grid, tuple(own.tolist()))
        for (li, arg), own in owners.items()
        if (info := launches[li].arg(arg)) is not None
    ]


Detector = Callable[[list[Launch], list[Access]], list[Problem]]
DETECTORS: tuple[Detector, ...] = (out_of_bounds, races, uncoalesced)  # a new problem kind is one more function


def problems(launches: list[Launch], accesses: list[Access]) -> list[Problem]:
    return [p for detect in DETECTORS for p in detect(launches, accesses)]


def _pid(p: Program) -> str:
    return f"({p[0]},{p[1]},{p[2]})"
