"""Efficiency: chains of elementwise ops at one line that run as separate kernels (unfused); attention
written as matmul → softmax → matmul instead of a fused attention kernel."""

from __future__ import annotations

from collections import defaultdict

from ...model import FrameKind, Profile
from ..context import ContextIndex
from . import EVERYWHERE, Finding, Severity, Threshold, Thresholds, rule
from ._evidence import line_sites, ms, op_chain, split_line, time_metric

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
        found = op_chain(ops, t["min_chain"], t["min_ms"])
        if found is None:
            continue
        executions, chain, time, saving = found.executions, found.length, found.time, found.saving
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


_BATCHED_MATMUL = frozenset({"aten::bmm", "aten::matmul", "aten::baddbmm", "aten::einsum"})
_SOFTMAX = frozenset({"aten::softmax", "aten::_softmax", "aten::_safe_softmax"})
_FUSED_ATTENTION = ("scaled_dot_product", "flash_attention", "efficient_attention", "fused_attn", "cudnn_attention")


@rule(
    "unfused_attention",
    "attention written as matmul → softmax → matmul (the score matrix goes through memory) instead of SDPA",
    thresholds={
        "min_ms": Threshold(0.5, "report a module whose softmax between batched matmuls took at least this"),
        "warn_pct": Threshold(1.0, "warn when that is at least this % of the measured time"),
    },
    applies=EVERYWHERE,
)
def unfused_attention(profile: Profile, t: Thresholds) -> list[Finding]:
    """Per module (else per function): batched matmuls and softmaxes at its own ops, none inside a fused
    attention op. Two matmuls per softmax is the signature; the profile has no order, so it is co-occurrence."""
    metric = time_metric(profile)
    inc = profile.inclusive(metric)
    count = profile.exclusive("count")
    total = profile.total(metric) or 1.0
    groups: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])  # matmuls, softmaxes, ns
    softmax_nodes: dict[tuple[str, str], list[int]] = defaultdict(list)
    for node in range(1, len(profile)):
        f = profile.frame_of(node)
        if f.kind is not FrameKind.OP or (f.name not in _BATCHED_MATMUL and f.name not in _SOFTMAX):
            continue
        where = _attention_context(profile, node)
        if where is None:
            continue  # inside another op of its kind, or inside a fused attention op
        acc = groups[where]
        if f.name in _BATCHED_MATMUL:
            acc[0] += count[node]
        else:
            acc[1] += count[node]
            acc[2] += inc[node]
            softmax_nodes[where].append(node)
    out: list[Finding] = []
    ctx = ContextIndex(profile)
    for (kind, name), (matmuls, softmaxes, ns) in groups.items():
        if softmaxes <= 0 or matmuls < 2 * softmaxes or ns < t["min_ms"] * 1e6:
            continue
        file, line = split_line(ctx.line(softmax_nodes[(kind, name)][0]))
        out.append(
            Finding(
                rule="unfused_attention",
                severity=Severity.WARNING if 100.0 * ns / total >= t["warn_pct"] else Severity.INFO,
                title=f"Unfused attention in {name}: softmax between batched matmuls ({ms(ns):,} ms in softmax)",
                evidence=f"{int(matmuls)} batched matmul call(s) and {int(softmaxes)} softmax call(s) in this {kind}, "
                f"no scaled_dot_product_attention; the softmax alone took {ms(ns)} ms "
                f"({100.0 * ns / total:.1f}% of the measured time)",
                file=file,
                line=line,
                module=name if kind == "module class" else None,
                estimated_saving_ms=ms(ns),
                saving_method="the softmax's own time, a lower bound: a fused kernel keeps the score matrix on chip "
                "(the matmuls stop writing and reading it too)",
                fix="use torch.nn.functional.scaled_dot_product_attention (FlashAttention / memory-efficient "
                "kernels), e.g. attn_implementation='sdpa' in transformers",
                occurrences=int(softmaxes),
                nodes=tuple(softmax_nodes[(kind, name)]),
            )
        )
    return out


def _attention_context(profile: Profile, node: int) -> tuple[str, str] | None:
    """The module (or else the Python function) an op runs in; None when an enclosing op is a matmul,
    a softmax or a fused attention op (it is that op's implementation, not the user's attention)."""
    function: tuple[str, str] | None = None
    parent = int(profile.parent[node])
    while parent > 0:
        f = profile.frame_of(parent)
        if f.kind is FrameKind.OP and (
            f.name in _BATCHED_MATMUL or f.name in _SOFTMAX or any(a in f.name for a in _FUSED_ATTENTION)
        ):
            return None
        if f.kind is FrameKind.MODULE:  # by class: every layer of a model is one place to fix
            return ("module class", f.cls or f.name)
        if f.kind is FrameKind.PYTHON and function is None:
            function = ("function", f"{f.file}:{f.name}")
        parent = int(profile.parent[parent])
    return function
