"""Structural diff of two profiles: unify by normalised context path, subtract, group, gate.

``diff(base, new, by=..., metric=...)`` returns rows sorted by |Δ|; ``regressions(result, pct)``
says which rows (and whether the total) grew by more than ``pct`` percent above a noise floor,
for ``kernelscope diff --fail-above``. Pure functions: neither profile is mutated.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ...errors import UsageError
from ...model import FrameKind, Profile
from ..per_step import StepScale, comparison_statement, scales_of
from .normalize import Key, key_of, normal_kernel
from .unify import Unified, UNode, unify

BYS = ("tree", "line", "function", "module", "op", "kernel")
NOISE_FLOOR_PCT = 1.0
TREE_KEY_FRAMES = 6  # rows below this share of the base total never trip --fail-above


@dataclass(frozen=True)
class DiffRow:
    key: str | None
    base: float
    new: float
    base_key: str | None = None  # the key in the base run, where it differs (a moved line)
    not_recorded: str | None = None  # "base" or "new": that side, a sample of steps, does not hold the key

    @property
    def delta(self) -> float:
        return self.new - self.base

    @property
    def delta_pct(self) -> float | None:
        return 100.0 * self.delta / self.base if self.base and self.not_recorded is None else None

    def to_json(self, scale: float) -> dict[str, Any]:
        pct = self.delta_pct
        out: dict[str, Any] = {"key": self.key}
        if self.base_key is not None:
            out["base_key"] = self.base_key
        out |= {
            "base": self.base / scale,
            "new": self.new / scale,
            # a key one sample does not hold: no measured change (the side's 0 is "none in the recorded steps")
            "delta": 0.0 if self.not_recorded else self.delta / scale,
            "delta_pct": None if pct is None else round(pct, 3),
        }
        if self.not_recorded:
            out["not_recorded"] = self.not_recorded
        return out


@dataclass(frozen=True)
class DiffResult:
    by: str
    metric: str
    rows: tuple[DiffRow, ...]  # sorted by |delta|, largest first
    total: DiffRow
    per_step: str | None = None  # values are per step (two samples of steps): how (``per_step.comparison_statement``)

    @property
    def unit(self) -> tuple[str, float]:
        return ("ms", 1e6) if self.metric.endswith("_ns") else ("", 1.0)

    def to_json(self) -> dict[str, Any]:
        unit, scale = self.unit
        out = {
            "schema": 1,
            "by": self.by,
            "metric": self.metric,
            "unit": unit,
            "rows": [r.to_json(scale) for r in self.rows],
            "total": self.total.to_json(scale),
        }
        if self.per_step:
            out["per_step"] = self.per_step
        return out


def pick_metric(base: Profile, new: Profile, metric: str | None) -> str:
    if metric:
        if metric not in base.metrics and metric not in new.metrics:
            known = sorted(set(base.metrics) | set(new.metrics))
            raise UsageError(f"unknown metric {metric!r}; the profiles have: {', '.join(known)}")
        return metric
    for m in ("time_ns", "cpu_time_ns"):
        if base.total(m) or new.total(m):
            return m
    return "count"


def _line_key(u: UNode, unified: Unified) -> str | None:
    if u.key.kind is FrameKind.PYTHON:
        return f"{u.key.file}:{u.new_line or u.base_line}"
    if u.key.kind is FrameKind.PART and u.key.file:
        frame = unified.new.frame_of(u.new[0]) if u.new else unified.base.frame_of(u.base[0])
        return f"{u.key.file}:{frame.line}"
    return None


def _kernel_key(cpu: bool) -> Callable[[UNode, Unified], str | None]:
    kinds = (FrameKind.KERNEL, FrameKind.OP) if cpu else (FrameKind.KERNEL,)

    def own(u: UNode, unified: Unified) -> str | None:
        return u.key.name if u.key.kind in kinds else None

    return own


def _simple(kind: FrameKind, fmt: Callable[[Key], str]) -> Callable[[UNode, Unified], str | None]:
    def own(u: UNode, unified: Unified) -> str | None:
        return fmt(u.key) if u.key.kind is kind else None

    return own


_OWN: dict[str, Callable[[UNode, Unified], str | None]] = {
    "line": _line_key,
    "function": _simple(FrameKind.PYTHON, lambda k: f"{k.file}:{k.name}"),
    "module": _simple(FrameKind.MODULE, lambda k: k.name),
    "op": _simple(FrameKind.OP, lambda k: k.name),
}


def diff(
    base: Profile, new: Profile, by: str = "line", metric: str | None = None, cwd: str | None = None
) -> DiffResult:
    if by not in BYS:
        raise UsageError(f"unknown grouping {by!r}; choose one of: {', '.join(BYS)}")
    m = pick_metric(base, new, metric)
    unified = unify(base, new, cwd)
    b, n = unified.values(m)
    b_scale, n_scale = scales_of(base.metadata, new.metadata)
    b, n = b * b_scale.factor, n * n_scale.factor
    total = DiffRow("total", float(b.sum()), float(n.sum()))
    if by == "tree":
        rows = _tree_rows(unified, b, n)
    else:
        cpu = base.metadata.get("device_run") is False and new.metadata.get("device_run") is False
        own = _kernel_key(cpu) if by == "kernel" else _OWN[by]
        keys: list[str | None] = [None] * len(unified.nodes)
        acc: dict[str | None, list[float]] = {}
        moved: dict[str | None, str] = {}
        for i, u in enumerate(unified.nodes):
            if i:
                k = own(u, unified)
                keys[i] = k if k is not None else keys[u.parent]
                if by == "line" and k is not None and u.base_line and u.new_line and u.base_line != u.new_line:
                    moved[k] = f"{u.key.file}:{u.base_line}"
            if b[i] or n[i]:
                a = acc.setdefault(keys[i], [0.0, 0.0])
                a[0] += b[i]
                a[1] += n[i]
        rows = [DiffRow(k, v[0], v[1], moved.get(k)) for k, v in acc.items()]
    rows = [_mark_unrecorded(r, b_scale, n_scale) for r in rows]
    rows.sort(key=lambda r: (-abs(r.delta), -max(r.base, r.new), r.key is None, r.key or ""))
    return DiffResult(by, m, tuple(rows), total, comparison_statement(b_scale, n_scale))


def _mark_unrecorded(row: DiffRow, base: StepScale, new: StepScale) -> DiffRow:
    """A key that a sample of steps does not hold may run in the steps it left out: not a drop to nothing."""
    if not row.base and base.sampled:
        return replace(row, not_recorded="base")
    if not row.new and new.sampled:
        return replace(row, not_recorded="new")
    return row


def _tree_rows(unified: Unified, b: np.ndarray[Any, Any], n: np.ndarray[Any, Any]) -> list[DiffRow]:
    """Every unified node with its inclusive values; the key is its path of labels (the last few when deep)."""
    nodes = unified.nodes
    bi, ni = b.copy(), n.copy()
    for i in range(len(nodes) - 1, 0, -1):
        bi[nodes[i].parent] += bi[i]
        ni[nodes[i].parent] += ni[i]
    # keys name a node by its last TREE_KEY_FRAMES labels: full paths of deep stacks grow quadratically
    tails: list[tuple[str, ...]] = [()] * len(nodes)
    depth = [0] * len(nodes)
    rows: list[DiffRow] = []
    for i in range(1, len(nodes)):
        u = nodes[i]
        tails[i] = (*tails[u.parent], u.label(unified.base, unified.new))[-TREE_KEY_FRAMES:]
        depth[i] = depth[u.parent] + 1
        if bi[i] or ni[i]:
            key = " > ".join(tails[i])
            rows.append(DiffRow(f"… > {key}" if depth[i] > TREE_KEY_FRAMES else key, float(bi[i]), float(ni[i])))
    return rows


@dataclass(frozen=True)
class Gate:
    pct: float
    noise_floor_pct: float
    total_tripped: bool
    rows: tuple[DiffRow, ...]  # rows above the floor that grew by more than pct (new rows: any growth)

    @property
    def tripped(self) -> bool:
        return self.total_tripped or bool(self.rows)


def regressions(result: DiffResult, pct: float, noise_floor_pct: float = NOISE_FLOOR_PCT) -> Gate:
    floor = abs(result.total.base) * noise_floor_pct / 100.0
    tripped = []
    for r in result.rows:
        p = r.delta_pct
        # a row trips when it grew by more than the floor and by more than pct (a new row: by anything);
        # a key that one sample of steps does not hold is no change
        if r.not_recorded is None and r.delta > floor and (p is None or p > pct):
            tripped.append(r)
    tp = result.total.delta_pct
    return Gate(pct, noise_floor_pct, tp is not None and tp > pct, tuple(tripped))


__all__ = ["BYS", "DiffResult", "DiffRow", "Gate", "Key", "diff", "key_of", "normal_kernel", "regressions", "unify"]
