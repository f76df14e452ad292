"""Unify two profiles by context path (hatchet's ``unify``), then read both sides' metrics off it.

Children are matched by their normalised :class:`~.normalize.Key`. Python frames are matched by
file and function, and their lines are paired between the runs by content (the normalised frames
below each line) with difflib's sequence alignment, so a line that moved because code above it
changed still meets its counterpart; lines that cannot be paired stay separate (added or removed).
"""

from __future__ import annotations

import difflib
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ...model import Frame, FrameKind, Profile
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
        if k.kind is FrameKind.KERNEL:
            return k.name
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
    root = UNode(-1, key_of(Frame.root()), (0,), (0,))
    nodes: list[UNode] = [root]
    stack = [0]
    while stack:
        uid = stack.pop()
        u = nodes[uid]
        b_groups = _children(base, u.base, base_keys)
        n_groups = _children(new, u.new, new_keys)
        for key in sorted(set(b_groups) | set(n_groups), key=_sort_key):
            b, n = b_groups.get(key, {}), n_groups.get(key, {})
            if key.kind is FrameKind.PYTHON:
                pairs = _pair_lines(base, new, b, n, base_keys, new_keys)
            else:
                pairs = [(0, 0, [x for v in b.values() for x in v], [x for v in n.values() for x in v])]
            for bl, nl, bn, nn in pairs:
                nodes.append(UNode(uid, key, tuple(bn), tuple(nn), bl, nl))
                stack.append(len(nodes) - 1)
    return Unified(base, new, tuple(nodes))


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
