"""Host side: Python loops of tiny ops, and optimizers that update one tensor at a time."""

from __future__ import annotations

from collections import defaultdict

from ...model import FrameKind, Profile
from ..context import ContextIndex
from . import EVERYWHERE, Applies, Finding, Severity, Threshold, Thresholds, rule, run_kind
from ._evidence import line_sites, ms, split_line


def host_metric(profile: Profile) -> str:
    return "cpu_time_ns" if profile.total("cpu_time_ns") > 0 else "time_ns"


@rule(
    "tiny_op_loop",
    "one line issued a great many tiny ops: a Python loop doing element-by-element work",
    thresholds={
        "min_calls": Threshold(1000, "report a line that issued at least this many op calls"),
        "max_call_us": Threshold(20.0, "... whose mean host time per call is at most this"),
        "loop_ratio": Threshold(20.0, "... and that ran this many times more often than its function's other lines"),
        "warn_pct": Threshold(1.0, "warn when the line's ops are at least this % of the measured time"),
    },
    applies=EVERYWHERE,
)
def tiny_op_loop(profile: Profile, t: Thresholds) -> list[Finding]:
    metric = host_metric(profile)
    inc = profile.inclusive(metric)
    count = profile.exclusive("count")
    total = profile.total(metric) or 1.0
    acc: dict[tuple[str, int], list[float]] = defaultdict(lambda: [0.0, 0.0])
    names: dict[tuple[str, int], set[str]] = defaultdict(set)
    nodes: dict[tuple[str, int], list[int]] = defaultdict(list)
    sites = line_sites(profile)
    executions = {site.node: min(float(count[op]) for op in site.ops) for site in sites}
    by_parent: dict[int, list[int]] = defaultdict(list)
    for site in sites:
        by_parent[int(profile.parent[site.node])].append(site.node)
    for site in sites:
        # a loop line runs many times per run of its function: compare with the function's other lines
        siblings = [executions[n] for n in by_parent[int(profile.parent[site.node])] if n != site.node]
        if not siblings or executions[site.node] < t["loop_ratio"] * max(1.0, min(siblings)):
            continue
        key = (site.file, site.line)
        for op in site.ops:
            acc[key][0] += count[op]
            acc[key][1] += inc[op]
            names[key].add(profile.frame_of(op).name)
        nodes[key].append(site.node)
    out: list[Finding] = []
    for (file, line), (calls, time) in acc.items():
        if calls < t["min_calls"] or time / calls > t["max_call_us"] * 1e3:
            continue
        distinct = len(names[(file, line)])
        saving = time * max(0.0, 1.0 - distinct / calls)
        ops = ", ".join(sorted(names[(file, line)])[:4])
        out.append(
            Finding(
                rule="tiny_op_loop",
                severity=Severity.WARNING if 100.0 * time / total >= t["warn_pct"] else Severity.INFO,
                title=f"{int(calls):,} tiny op calls from {file}:{line} (a Python loop over elements?)",
                evidence=f"{int(calls):,} calls of {distinct} op(s) ({ops}) averaging {time / calls / 1e3:.1f} µs, "
                f"{ms(time)} ms in all ({100.0 * time / total:.1f}% of the measured time)",
                file=file,
                line=line,
                estimated_saving_ms=ms(saving),
                saving_method="the ops' time less one call per distinct op (as if the loop were one vectorised op)",
                fix="vectorise: replace the Python loop with whole-tensor ops (indexing, torch.where, cumsum, "
                "scatter/gather), or torch.compile the loop",
                occurrences=int(calls),
                nodes=tuple(nodes[(file, line)]),
            )
        )
    return out


_OPTIMIZER_SCOPE = "Optimizer.step#"
_MULTI_TENSOR = ("_foreach_", "_fused_")


@rule(
    "single_tensor_optimizer",
    "an optimizer step updated parameters one tensor at a time (foreach=False or a for-loop optimizer)",
    thresholds={
        "min_calls": Threshold(20, "report optimizer steps that issued at least this many op calls"),
        "warn_pct": Threshold(1.0, "warn (on GPU runs and traces) when the steps are this % of the measured time"),
        "foreach_speedup": Threshold(2.0, "assumed speed-up of the multi-tensor path, for the saving estimate"),
    },
    applies=EVERYWHERE,
)
def single_tensor_optimizer(profile: Profile, t: Thresholds) -> list[Finding]:
    metric = host_metric(profile)
    inc = profile.inclusive(metric)
    count = profile.exclusive("count")
    total = profile.total(metric) or 1.0
    kids = profile.children
    ctx = ContextIndex(profile)
    # on CPU, PyTorch's default is the single-tensor path and foreach helps less: say so, do not warn
    cpu = run_kind(profile) is Applies.CPU_RUN
    out: list[Finding] = []
    for node in range(1, len(profile)):
        f = profile.frame_of(node)
        if f.kind is not FrameKind.SCOPE or not f.name.startswith(_OPTIMIZER_SCOPE):
            continue
        ops = [c for c in kids[node] if profile.frame_of(c).kind is FrameKind.OP]
        names = {profile.frame_of(c).name for c in ops}
        if not ops or any(m in n for n in names for m in _MULTI_TENSOR):
            continue
        calls = float(sum(count[c] for c in ops))
        if calls < t["min_calls"]:
            continue
        time = float(inc[node])
        share = 100.0 * time / total
        saving = time * (1.0 - 1.0 / max(t["foreach_speedup"], 1.0))
        file, line = split_line(ctx.line(node))
        optimizer = f.name[len(_OPTIMIZER_SCOPE) :].split(".")[0]
        out.append(
            Finding(
                rule="single_tensor_optimizer",
                severity=Severity.WARNING if share >= t["warn_pct"] and not cpu else Severity.INFO,
                title=f"{optimizer} updates parameters one tensor at a time ({int(calls):,} op calls in its steps)",
                evidence=f"{int(calls):,} calls of {len(names)} op(s), none multi-tensor (_foreach_/_fused_); "
                f"{ms(time)} ms ({share:.1f}% of the measured time)",
                file=file,
                line=line,
                estimated_saving_ms=ms(saving),
                saving_method=f"the steps' time at an assumed {t['foreach_speedup']:g}× speed-up of the foreach path",
                fix=f"construct {optimizer} with foreach=True (or fused=True on GPU)",
                occurrences=int(calls),
                nodes=(node,),
            )
        )
    return out
