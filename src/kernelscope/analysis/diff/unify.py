"""Unify two profiles by context path (hatchet's ``unify``), then read both sides' metrics off it.

Children are matched by their normalised :class:`~.normalize.Key`. Python frames are matched by
file and function, and their lines are paired between the runs by content (the normalised frames
below each line) with difflib's sequence alignment, so a line that moved because code above it
changed still meets its counterpart; lines that cannot be paired stay separate (added or removed).
Between a live run and a trace, which names modules by class and counter (``MLP_0``), the only unmatched
module of a class under a matched parent meets its counterpart (``_pair_modules``).
"""

from __future__ import annotations

import difflib
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ...model import Frame, FrameKind, Profile
from ..transforms import instance_class
from .normalize import Key, key_of

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class UNode:
    """One node of the unified tree; ``base``/``new`` are the nodes of each profile it stands for."""

    parent: int
    key: Key
    base: tuple[int, ...]
    new: tuple[int, ...]
    base_line: int = 0  # python frames: the line in each run (0 when absent on that side)
    new_line: int = 0

    def label(self, base: Profile, new: Profile) -> str:
        k = self.key
        if k.kind is FrameKind.PYTHON:
            line = self.new_line or self.base_line
            moved = (
                f" (was :{self.base_line})"
                if self.base_line and self.new_line and self.base_line != self.new_line
                else ""
            )
            return f"{k.file}:{line} {k.name}{moved}"
        frame = new.frame_of(self.new[0]) if self.new else base.frame_of(self.base[0])
        if k.kind is FrameKind.MODULE and frame.name != k.name and self.base:
            frame = base.frame_of(self.base[0])  # a module paired with a trace's: its attribute path (_pair_modules)
        if k.kind is FrameKind.KERNEL:
            return k.name
        if k.kind is FrameKind.REGION and frame.cls:  # a compiled region: its name, the same on both sides
            return frame.label()
        return frame.label() if k.kind is not FrameKind.SCOPE and k.kind is not FrameKind.REGION else k.name


@dataclass(frozen=True)
class Unified:
    base: Profile
    new: Profile
    nodes: tuple[UNode, ...]  # node 0 is the root; parents precede children

    def values(self, metric: str) -> tuple[FloatArray, FloatArray]:
        """Exclusive ``metric`` per unified node, for the base and the new profile."""
        return _side(self.nodes, self.base.exclusive(metric), True), _side(
            self.nodes, self.new.exclusive(metric), False
        )


def _side(nodes: tuple[UNode, ...], col: FloatArray, base: bool) -> FloatArray:
    out = np.zeros(len(nodes), dtype=np.float64)
    for i, u in enumerate(nodes):
        members = u.base if base else u.new
        if members:
            out[i] = float(col[list(members)].sum())
    return out


def unify(base: Profile, new: Profile, cwd: str | None = None) -> Unified:
    base_keys = [key_of(f, cwd) for f in base.frames]
    new_keys = [key_of(f, cwd) for f in new.frames]
    # a trace that names functions (by their def lines) against a profile of the lines that ran (a live run):
    # python frames compare by function (True: the base is the trace)
    b_def, n_def = (p.metadata.get("python_lines") == "def" for p in (base, new))
    def_lines = b_def if b_def != n_def else None
    if def_lines is not None:
        if def_lines:
            new_keys = _onto_trace_files(new_keys, base_keys)
        else:
            base_keys = _onto_trace_files(base_keys, new_keys)
    root = UNode(-1, key_of(Frame.root()), (0,), (0,))
    nodes: list[UNode] = [root]
    stack = [0]
    while stack:
        uid = stack.pop()
        u = nodes[uid]
        b_groups = _children(base, u.base, base_keys)
        n_groups = _children(new, u.new, new_keys)
        _pair_modules(base, new, b_groups, n_groups)
        for key in sorted(set(b_groups) | set(n_groups), key=_sort_key):
            b, n = b_groups.get(key, {}), n_groups.get(key, {})
            if key.kind is FrameKind.PYTHON and def_lines is not None:
                pairs = _one_row_per_function(b, n, def_lines)
            elif key.kind is FrameKind.PYTHON:
                pairs = _pair_lines(base, new, b, n, base_keys, new_keys)
            else:
                pairs = [(0, 0, [x for v in b.values() for x in v], [x for v in n.values() for x in v])]
            for bl, nl, bn, nn in pairs:
                nodes.append(UNode(uid, key, tuple(bn), tuple(nn), bl, nl))
                stack.append(len(nodes) - 1)
    return Unified(base, new, tuple(nodes))


def _onto_trace_files(keys: list[Key], trace_keys: list[Key]) -> list[Key]:
    """A trace writes a file relative to the ``sys.path`` entry it is under (``train.py`` for the script run), a
    live run relative to the working directory (``scripts/train.py``) or absolute: a live file takes the trace's
    name where that is its path's tail (the longest such)."""
    files = {k.file for k in trace_keys if k.kind is FrameKind.PYTHON and k.file}
    onto: dict[str, str] = {}
    out = []
    for k in keys:
        if k.kind is FrameKind.PYTHON and k.file and k.file not in files:
            if k.file not in onto:
                tails = [f for f in files if k.file.endswith("/" + f.lstrip("/"))]
                onto[k.file] = max(tails, key=len) if tails else k.file
            k = Key(k.kind, k.name, onto[k.file], k.module, k.device)
        out.append(k)
    return out


def _pair_modules(
    base: Profile, new: Profile, b: dict[Key, dict[int, list[int]]], n: dict[Key, dict[int, list[int]]]
) -> None:
    """A trace names a module by class and instance counter (``MLP_0``), a live run by attribute path (``MLP`` for
    the model itself, ``layers.0``): under one matched parent, the only unmatched module of a class on each side,
    one of them named the trace's way, is the same module. Its group moves under the other side's key (the
    attribute path's, where one side has it), so they unify as one node."""
    only_b = _unmatched_modules(base, b, n)
    only_n = _unmatched_modules(new, n, b)
    for cls in only_b.keys() & only_n.keys():
        if len(only_b[cls]) != 1 or len(only_n[cls]) != 1:
            continue
        (kb, fb), (kn, fn) = only_b[cls][0], only_n[cls][0]
        b_trace, n_trace = instance_class(fb) is not None, instance_class(fn) is not None
        if b_trace == n_trace:
            continue  # two live runs, or two traces: a renamed module is another module
        if n_trace:
            n[kb] = n.pop(kn)  # the base's attribute path names both
        else:
            b[kn] = b.pop(kb)


def _unmatched_modules(
    p: Profile, mine: dict[Key, dict[int, list[int]]], other: dict[Key, dict[int, list[int]]]
) -> dict[str, list[tuple[Key, Frame]]]:
    out: dict[str, list[tuple[Key, Frame]]] = defaultdict(list)
    for key, by_line in mine.items():
        if key.kind is FrameKind.MODULE and key not in other:
            f = p.frame_of(next(iter(by_line.values()))[0])
            if f.cls:
                out[f.cls].append((key, f))
    return out


def _sort_key(k: Key) -> tuple[str, str, str, str, str]:
    return (k.kind.value, k.name, k.file, k.module, k.device)


def _children(p: Profile, parents: tuple[int, ...], keys: list[Key]) -> dict[Key, dict[int, list[int]]]:
    """Children of ``parents`` by key, then by line (0 for non-python frames)."""
    out: dict[Key, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
    kids = p.children
    for par in parents:
        for c in kids[par]:
            f = p.frame_of(c)
            out[keys[int(p.frame[c])]][f.line if f.kind is FrameKind.PYTHON else 0].append(c)
    return out


def _one_row_per_function(
    b: dict[int, list[int]], n: dict[int, list[int]], base_defs: bool
) -> list[tuple[int, int, list[int], list[int]]]:
    """One function's rows when one side is a trace that names functions, not lines: a ``python_function``
    event carries the function's def line, or for a frame already running when the trace began the line it was
    at then; neither says which line of the other side it holds. So the function is one row on both sides,
    shown at the trace's (first) line; the other side's line is 0."""
    defs, lines = (b, n) if base_defs else (n, b)
    if not defs or not lines:
        return [(line, 0, b[line], []) for line in sorted(b)] + [(0, line, [], n[line]) for line in sorted(n)]
    at = min(defs)
    mine = [x for line in sorted(defs) for x in defs[line]]
    theirs = [x for line in sorted(lines) for x in lines[line]]
    return [(at, 0, mine, theirs) if base_defs else (0, at, theirs, mine)]


def _content(p: Profile, nodes: list[int], keys: list[Key]) -> tuple[Key, ...]:
    kids = p.children
    return tuple(sorted({keys[int(p.frame[c])] for n in nodes for c in kids[n]}, key=_sort_key))


def _pair_lines(
    base: Profile,
    new: Profile,
    b: dict[int, list[int]],
    n: dict[int, list[int]],
    base_keys: list[Key],
    new_keys: list[Key],
) -> list[tuple[int, int, list[int], list[int]]]:
    """Pair the lines of one function between the runs: by content in order, then by position."""
    b_lines, n_lines = sorted(b), sorted(n)
    b_sig = [_content(base, b[line], base_keys) for line in b_lines]
    n_sig = [_content(new, n[line], new_keys) for line in n_lines]
    out: list[tuple[int, int, list[int], list[int]]] = []
    matcher = difflib.SequenceMatcher(None, b_sig, n_sig, autojunk=False)  # type: ignore[arg-type]
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
            for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                out.append((b_lines[i], n_lines[j], b[b_lines[i]], n[n_lines[j]]))
            continue
        for i in range(i1, i2):
            out.append((b_lines[i], 0, b[b_lines[i]], []))
        for j in range(j1, j2):
            out.append((0, n_lines[j], [], n[n_lines[j]]))
    return out
