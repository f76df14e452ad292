"""Metric selection: raw columns and the derived metrics people ask for.

A spec names either a stored column (``time_ns``, ``flops``, a user metric such
as ``tokens``) or a derived value computed from stored columns:

======================  =====================================================
``time/ms``              ``time_ns`` in ms (also ``/s``, ``/us``, ``/ns``);
                         ``cpu_time/ms`` likewise for ``cpu_time_ns``
``time/%``               share of the profile's total ``time_ns``
``avg``                  average ``time_ns`` per call, in µs (``avg/ms`` too)
``flop/s``               ``flops`` per second of ``time_ns`` (``gflop/s``, ``tflop/s``)
``byte/s``               ``bytes`` per second of ``time_ns`` (``gbyte/s``)
``A/B``                  ratio of two stored columns, e.g. ``time_ns/tokens``
``X/s``                  a user metric per second of wall time, e.g. ``tokens/s``
                         (``totals["wall_ns"]``; undefined without a wall time)
======================  =====================================================

Undefined values (a division by zero, no wall time) are NaN; renderers print them blank.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..errors import UsageError

Values = Mapping[str, float]

_TIME_UNITS = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1.0}
_RATE_PREFIX = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}


@dataclass(frozen=True)
class MetricSpec:
    name: str  # as the user wrote it; the column header
    needs: tuple[str, ...]  # stored columns it reads
    compute: Callable[[Values, Values], float]  # (values, totals) -> value
    unit: str = ""
    # Additive metrics may be summed over children; ratios may not.
    additive: bool = True

    def __call__(self, values: Values, totals: Values) -> float:
        return self.compute(values, totals)


def _div(a: float, b: float) -> float:
    return a / b if b else math.nan


Compute = Callable[[Values, Values], float]


def _col(c: str) -> Compute:
    return lambda v, t: v.get(c, 0.0)


def _pct(c: str) -> Compute:
    return lambda v, t: 100.0 * _div(v.get(c, 0.0), t.get(c, 0.0))


def _scaled(c: str, k: float) -> Compute:
    return lambda v, t: v.get(c, 0.0) / k


def _avg(k: float) -> Compute:
    return lambda v, t: _div(v.get("time_ns", 0.0), v.get("count", 0.0)) / k


def _rate(c: str, k: float) -> Compute:
    return lambda v, t: _div(v.get(c, 0.0), v.get("time_ns", 0.0) / 1e9) / k


def _per_wall_second(c: str) -> Compute:
    return lambda v, t: _div(v.get(c, 0.0), t.get("wall_ns", 0.0) / 1e9)


def _ratio(a: str, b: str) -> Compute:
    return lambda v, t: _div(v.get(a, 0.0), v.get(b, 0.0))


def parse_metric(spec: str, available: set[str]) -> MetricSpec:
    s = spec.strip()
    if s in available:
        return MetricSpec(s, (s,), _col(s))
    base, _, unit = s.partition("/")
    if unit and base in ("time", "cpu_time"):
        col = f"{base}_ns"
        if unit == "%":
            return MetricSpec(s, (col,), _pct(col), "%")
        if unit in _TIME_UNITS:
            return MetricSpec(s, (col,), _scaled(col, _TIME_UNITS[unit]), unit)
    if s == "intensity":  # arithmetic intensity, FLOP per byte moved (the roofline's x axis)
        return MetricSpec(s, ("flops", "bytes"), _ratio("flops", "bytes"), "FLOP/B", additive=False)
    if base == "avg" and (not unit or unit in _TIME_UNITS):
        scale = _TIME_UNITS[unit or "us"]
        return MetricSpec(
            s,
            ("time_ns", "count"),
            _avg(scale),
            unit or "us",
            additive=False,
        )
    if unit == "s":
        for prefix, scale in _RATE_PREFIX.items():
            for stem, col in (("flop", "flops"), ("byte", "bytes")):
                if base == prefix + stem:
                    return MetricSpec(
                        s,
                        (col, "time_ns"),
                        _rate(col, scale),
                        s,
                        additive=False,
                    )
        if base in available:
            return MetricSpec(s, (base,), _per_wall_second(base), s, additive=False)
    if unit:
        num = base if base in available else f"{base}_ns" if f"{base}_ns" in available else None
        if num is not None and unit in available:
            return MetricSpec(s, (num, unit), _ratio(num, unit), additive=False)
    known = ", ".join(sorted(available)) or "none"
    missing = _missing_standard(s)
    if missing:
        raise UsageError(
            f"metric {spec!r} needs {missing!r}, which this profile does not have{_WHY.get(missing, '')}; stored metrics: {known}"
        )
    raise UsageError(
        f"unknown metric {spec!r}; stored metrics: {known}; derived: time/ms, time/%, avg, flop/s, byte/s, intensity, A/B, X/s"
    )


_STANDARD = ("time_ns", "cpu_time_ns", "count", "flops", "bytes", "alloc_bytes")
_WHY = {
    "flops": " (it was recorded without input shapes)",
    "bytes": " (it was recorded without input shapes)",
    "alloc_bytes": " (it was recorded without memory profiling)",
    "cpu_time_ns": " (it has no host op times)",
}


def _missing_standard(spec: str) -> str | None:
    """The documented stored metric a spec would need, when the profile lacks it."""
    base = spec.partition("/")[0]
    stems = {"flop": "flops", "byte": "bytes", "time": "time_ns", "cpu_time": "cpu_time_ns", "avg": "time_ns"}
    for prefix in _RATE_PREFIX:
        for stem, col in (("flop", "flops"), ("byte", "bytes")):
            stems[prefix + stem] = col
    if spec in _STANDARD:
        return spec
    if base in _STANDARD:
        return base
    return stems.get(base)


def parse_metrics(specs: str | list[str] | None, available: set[str], default: list[str]) -> list[MetricSpec]:
    if specs is None:
        names = [d for d in default if d.split("/")[0] + "_ns" in available or d in available or d.startswith("time")]
    elif isinstance(specs, str):
        names = [x for x in specs.split(",") if x.strip()]
    else:
        names = [x for part in specs for x in part.split(",") if x.strip()]
    return [parse_metric(n, available) for n in names]
