"""Number formatting shared by the text renderers."""

from __future__ import annotations

from ..analysis.metrics import MetricSpec


def fmt_value(spec: MetricSpec, value: float) -> str:
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
