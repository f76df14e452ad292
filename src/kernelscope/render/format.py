"""Number formatting shared by the text renderers."""

from __future__ import annotations

import math

from ..analysis.metrics import MetricSpec

_UNIT_NS = (("s", 1e9), ("ms", 1e6), ("us", 1e3), ("ns", 1.0))


def time_unit(total_ns: float) -> str:
    """The unit a table of times up to ``total_ns`` reads best in: s from 10 s, then ms, us, ns
    (at most four digits before the point)."""
    for unit, scale in _UNIT_NS:
        if abs(total_ns) >= scale * (10 if unit == "s" else 1):
            return unit
    return "ns"


def fmt_ns(ns: float) -> str:
    """A duration with a unit chosen for its magnitude: ``566.8 ms``, ``11.90 s``, ``3.2 µs``."""
    if not ns:
        return "0"
    unit = next((u for u, scale in _UNIT_NS if abs(ns) >= scale), "ns")
    v = ns / dict(_UNIT_NS)[unit]
    shown = unit.replace("us", "µs")
    return f"{v:,.1f} {shown}" if abs(v) >= 10 else f"{v:.2f} {shown}"


def header_name(spec: MetricSpec, scope: str) -> str:
    """A column header that says what the value covers: ``scope`` is ``incl`` or ``self``.

    ``time/ms`` → ``ms incl``, ``time/%`` → ``% incl``, ``count`` → ``calls`` (a frame's own calls),
    ``flops`` → ``flops incl``; ratios (``avg``, ``tflop/s``) keep their name.
    """
    name = spec.name
    if name == "count":
        return "calls"
    if not spec.additive:
        return name
    for stem, label in (("time/", ""), ("cpu_time/", "cpu ")):
        if name.startswith(stem):
            name = label + name[len(stem) :].replace("us", "µs")
    return f"{name} {scope}"


def fmt_value(spec: MetricSpec, value: float) -> str:
    """``value`` for a table cell; undefined values (NaN: a division by zero) are blank."""
    if isinstance(value, float) and math.isnan(value):
        return ""
    name = spec.name
    if spec.unit == "%":
        return f"{value:5.1f}%"
    if name in ("count",) or name.endswith("count"):
        return f"{round(value):,}"
    if name.endswith("bytes") and "/" not in name:
        return fmt_bytes(value)
    if name in ("flops",) and "/" not in name:
        return fmt_si(value)
    if spec.unit in ("ms", "us", "s", "ns"):
        return f"{value:,.3f}" if abs(value) < 1000 else f"{value:,.1f}"
    if abs(value) >= 1e4 or (value and abs(value) < 1e-2):
        return fmt_si(value)
    return f"{value:,.3f}" if value != int(value) else f"{int(value):,}"


def fmt_bytes(value: float) -> str:
    v = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(v) < 1024 or unit == "TiB":
            return f"{v:.0f} {unit}" if unit == "B" else f"{v:.1f} {unit}"
        v /= 1024
    return f"{v:.1f} TiB"


def fmt_si(value: float) -> str:
    v = float(value)
    for unit in ("", "k", "M", "G", "T", "P"):
        if abs(v) < 1000 or unit == "P":
            return f"{v:.3g}{unit}"
        v /= 1000
    return f"{v:.3g}P"
