"""Efficiency: chains of elementwise ops at one line that run as separate kernels (unfused)."""

from __future__ import annotations

from collections import defaultdict

from ...model import Profile
from . import EVERYWHERE, Finding, Severity, Threshold, Thresholds, rule
from ._evidence import line_sites, ms, time_metric

_ELEMENTWISE = frozenset(
    [
        "abs",
        "add",
        "sub",
        "rsub",
        "mul",
        "div",
        "neg",
        "reciprocal",
        "relu",
        "gelu",
        "silu",
        "sigmoid",
        "tanh",
        "exp",
        "exp2",
        "expm1",
        "log",
        "log1p",
        "log2",
        "sqrt",
        "rsqrt",
        "pow",
        "square",
        "clamp",
        "clamp_min",
        "clamp_max",
        "where",
        "maximum",
        "minimum",
        "threshold",
        "hardtanh",
        "leaky_relu",
        "elu",
        "mish",
        "softplus",
        "sin",
        "cos",
        "erf",
        "floor",
        "ceil",
        "round",
        "trunc",
        "sign",
        "lerp",
        "addcmul",
        "addcdiv",
        "masked_fill",
    ]
)


def is_elementwise(op: str) -> bool:
    name = op.rpartition("::")[2].rstrip("_")
    return op.startswith("aten::") and name in _ELEMENTWISE


@rule(
    "unfused_elementwise",
    "a chain of elementwise ops at one line runs as separate kernels, each reading and writing memory",
    thresholds={
        "min_chain": Threshold(3, "report a line that runs at least this many elementwise ops per execution"),
        "min_ms": Threshold(0.5, "... and whose estimated saving is at least this"),
        "warn_pct": Threshold(1.0, "warn when the saving is at least this % of the measured time"),
    },
    applies=EVERYWHERE,
)
def unfused_elementwise(profile: Profile, t: Thresholds) -> list[Finding]:
    metric = time_metric(profile)
    inc = profile.inclusive(metric)
    count = profile.exclusive("count")
    total = profile.total(metric) or 1.0
    per_line: dict[tuple[str, int], dict[str, list[float]]] = defaultdict(lambda: defaultdict(lambda: [0.0, 0.0]))
    nodes: dict[tuple[str, int], list[int]] = defaultdict(list)
    for site in line_sites(profile):
        for op in site.ops:
            name = profile.frame_of(op).name
            if is_elementwise(name):
                acc = per_line[(site.file, site.line)][name]
                acc[0] += count[op]
                acc[1] += inc[op]
                nodes[(site.file, site.line)].append(op)
    out: list[Finding] = []
    for (file, line), ops in per_line.items():
        calls = [c for c, _ in ops.values() if c > 0]
        if len(ops) < 2 or not calls:
            continue
        executions = min(calls)
        chain = sum(calls) / executions
        if round(chain) < t["min_chain"]:
            continue
        time = sum(v for _, v in ops.values())
        saving = time - max(v for _, v in ops.values())
        if saving < t["min_ms"] * 1e6:
            continue
        names = ", ".join(f"{n.removeprefix('aten::')}×{c / executions:.0f}" for n, (c, _) in sorted(ops.items()))
        out.append(
            Finding(
                rule="unfused_elementwise",
                severity=Severity.WARNING if 100.0 * saving / total >= t["warn_pct"] else Severity.INFO,
                title=f"{round(chain)} unfused elementwise ops at {file}:{line}",
                evidence=f"per execution: {names}; {int(executions)} execution(s), {ms(time)} ms "
                f"({100.0 * time / total:.1f}% of the measured time)",
                file=file,
                line=line,
                estimated_saving_ms=ms(saving),
                saving_method="the chain's time less its slowest op (a fused kernel reads and writes memory once)",
                fix="fuse the chain: torch.compile the function (Inductor emits one kernel), or use a fused op",
                occurrences=int(executions),
                nodes=tuple(nodes[(file, line)]),
            )
        )
    return out
