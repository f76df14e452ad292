"""XLA (JAX) fusion boundaries inside a jitted function: two elementwise kernels XLA did not fuse, found in the
compiled HLO by the XPlane import (``importers.xplane.boundaries``) and measured per execution."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from ...model import FrameKind, Profile
from . import Finding, Severity, Threshold, Thresholds, rule
from ._evidence import ms, op_chain, time_metric

_FIX = {
    "callback": "a host callback (jax.pure_callback / io_callback / debug.callback) splits the fusion and copies "
    "its operands to the host: compute it with jnp ops inside the jitted function, or call it outside the step",
    "custom-call": "an opaque custom call splits the fusion: move the elementwise work on either side into one "
    "side of it, or fold it into the custom kernel",
    "opt-barrier": "drop the jax.lax.optimization_barrier here unless it is needed to bound memory or order work",
    "": "XLA kept two elementwise kernels of the same size apart: look for a layout change, a dtype change or a "
    "value used twice between them, and write the chain so that it is one expression",
}


@rule(
    "xla_fusion_boundary",
    "inside a jitted function two elementwise kernels XLA did not fuse (split by a host callback, a custom "
    "call or an optimization barrier, or left adjacent): the array between them goes through memory again",
    thresholds={
        "min_ms": Threshold(0.5, "report a place whose estimated saving is at least this"),
        "warn_pct": Threshold(1.0, "warn when the saving is at least this % of the measured time"),
    },
)
def xla_fusion_boundary(profile: Profile, t: Thresholds) -> list[Finding]:
    rows = profile.metadata.get("fusion_boundaries")
    if not isinstance(rows, list):
        return []  # recorded by the XPlane import and live JAX runs
    total = profile.total(time_metric(profile)) or 1.0
    places: dict[tuple[str, int, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        if isinstance(row, dict) and row.get("file") and row.get("line"):
            places[(str(row["file"]), int(row["line"]), str(row.get("between") or ""))].append(row)
    kernels = _kernel_nodes(profile)
    out: list[Finding] = []
    for (file, line, between), found in sorted(places.items()):
        saving = 0.0
        executions = 0
        pairs: list[str] = []
        nodes: list[int] = []
        for row in found:
            chain = op_chain(
                {
                    str(row["producer"]): (float(row["executions"]), float(row["producer_ns"])),
                    str(row["consumer"]): (float(row["executions"]), float(row["consumer_ns"])),
                },
                min_length=2,
                min_ms=0.0,
            )
            if chain is None:
                continue
            saving += chain.saving
            executions = max(executions, int(chain.executions))
            via = f" → {between} → " if between else " → "
            pairs.append(
                f"{row['producer']} ({ms(float(row['producer_ns']))} ms){via}{row['consumer']} "
                f"({ms(float(row['consumer_ns']))} ms) in {row.get('function', '?')}"
            )
            region = _region(str(row.get("function") or ""))
            for name in (str(row["producer"]), str(row["consumer"])):
                nodes.extend(n for n in kernels.get(name, []) if any(f.name == region for f in profile.path(n)))
        if not pairs or saving < t["min_ms"] * 1e6:
            continue
        kind = "callback" if "callback" in between else between.split(" ", 1)[0]
        split = f"split by {between}" if between else "adjacent, not fused"
        out.append(
            Finding(
                rule="xla_fusion_boundary",
                severity=Severity.WARNING if 100.0 * saving / total >= t["warn_pct"] else Severity.INFO,
                title=f"XLA did not fuse {2 * len(pairs)} elementwise kernels at {file}:{line} ({split})",
                evidence=f"{'; '.join(pairs)}; {executions} execution(s). The first kernel writes an array the "
                "second reads back: one more pass over memory each",
                file=file,
                line=line,
                estimated_saving_ms=ms(saving),
                saving_method="the two kernels' time less the slower one's (fused, the array stays in registers)",
                fix=_FIX.get(kind, _FIX["custom-call"]),
                occurrences=executions,
                nodes=tuple(nodes),
            )
        )
    return out


def _region(module: str) -> str:
    """``jit_step`` (the HLO module) -> ``jit(step)`` (the region frame)."""
    return f"jit({module[4:]})" if module.startswith("jit_") else module


def _kernel_nodes(profile: Profile) -> dict[str, list[int]]:
    out: dict[str, list[int]] = defaultdict(list)
    for node in range(1, len(profile)):
        f = profile.frame_of(node)
        if f.kind is FrameKind.KERNEL:
            out[f.name].append(node)
    return out
