"""XLA (JAX) rules: a jitted function compiled again and again (a new executable per input signature); ops
run eagerly one executable at a time where jax.jit would fuse them. (dtype round trips: ``dtype.py``.)"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from ...importers.xplane.place import NO_SOURCE
from ...model import FrameKind, Profile
from . import Finding, Severity, Threshold, Thresholds, rule
from ._evidence import op_chain


@rule(
    "jit_recompile",
    "a jitted JAX function ran as several XLA executables: it was traced and compiled again for new input "
    "shapes, dtypes or static arguments",
    thresholds={
        "min_executables": Threshold(2, "report a function with at least this many executables"),
        "warn_executables": Threshold(3, "warn (else info) from this many: one per call site or phase is normal"),
    },
)
def jit_recompile(profile: Profile, t: Thresholds) -> list[Finding]:
    rows = profile.metadata.get("jit_executables")
    if not isinstance(rows, list):
        return []  # recorded by the XPlane import and live JAX runs
    by_function: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        if isinstance(row, dict) and row.get("function") and row.get("file"):
            by_function[str(row["function"])].append(row)
    out: list[Finding] = []
    for function, execs in sorted(by_function.items()):
        n = len(execs)
        if n < t["min_executables"]:
            continue
        sites: dict[tuple[str, int], int] = defaultdict(int)
        for row in execs:
            sites[(str(row["file"]), int(row.get("line") or 0))] += 1
        (file, line), at_site = max(sites.items(), key=lambda kv: (kv[1], -kv[0][1]))
        where = ", ".join(f"{f}:{ln} ({k})" for (f, ln), k in sorted(sites.items()))
        out.append(
            Finding(
                rule="jit_recompile",
                severity=Severity.WARNING if n >= t["warn_executables"] else Severity.INFO,
                title=f"jit({function}) was compiled {n} times",
                evidence=f"{n} XLA executables of jit({function}) ran, first traced from {where}; "
                f"{at_site} of them from {file}:{line}. JAX compiles anew for each new input shape, dtype or "
                "static argument value",
                file=file,
                line=line or None,
                fix="keep the inputs' shapes and dtypes stable (pad or bucket variable sizes), and pass values "
                "that change every call as arrays rather than static arguments",
                occurrences=n,
            )
        )
    return out


@rule(
    "eager_ops",
    "several JAX ops at one line run eagerly, each as its own XLA executable (a dispatch and a pass over "
    "memory each), where jax.jit would fuse them",
    thresholds={
        "min_ops": Threshold(2, "report a line that runs at least this many eager ops per execution"),
        "min_ms": Threshold(0.5, "... and whose estimated saving is at least this"),
        "warn_pct": Threshold(1.0, "warn when the saving is at least this % of the measured time"),
    },
)
def eager_ops(profile: Profile, t: Thresholds) -> list[Finding]:
    if profile.metadata.get("framework") != "jax":
        return []
    inc = profile.inclusive("time_ns")
    count = profile.exclusive("count")
    total = profile.total("time_ns") or 1.0
    kids = profile.children
    # per line: eager op name -> [calls, time]
    per_line: dict[tuple[str, int], dict[str, list[float]]] = defaultdict(lambda: defaultdict(lambda: [0.0, 0.0]))
    nodes: dict[tuple[str, int], list[int]] = defaultdict(list)
    for node in range(1, len(profile)):
        f = profile.frame_of(node)
        if f.kind is not FrameKind.PYTHON:
            continue
        for region in kids[node]:
            r = profile.frame_of(region)
            if r.kind is not FrameKind.REGION or not r.name.startswith("jit("):
                continue
            region_calls, has_lines = _calls_below(profile, region, count)
            if has_lines:
                continue  # a jitted function of the program (its own lines inside): not an eager op
            acc = per_line[(f.file, f.line)][r.name]
            acc[0] += region_calls
            acc[1] += float(inc[region])
            nodes[(f.file, f.line)].append(region)
    out: list[Finding] = []
    for (file, line), ops in per_line.items():
        found = op_chain(ops, t["min_ops"], t["min_ms"], min_distinct=t["min_ops"])
        if found is None:
            continue
        executions, chain, time, saving = found.executions, found.length, found.time, found.saving
        names = ", ".join(f"{n[4:-1]}×{c / executions:.0f}" for n, (c, _) in sorted(ops.items()))
        out.append(
            Finding(
                rule="eager_ops",
                severity=Severity.WARNING if 100.0 * saving / total >= t["warn_pct"] else Severity.INFO,
                title=f"{round(chain)} eager JAX ops at {file}:{line}, each its own XLA executable",
                evidence=f"per execution: {names}; {int(executions)} execution(s), {time / 1e6:.3f} ms "
                f"({100.0 * time / total:.1f}% of the measured time), outside any jitted function of the program",
                file=file,
                line=line,
                estimated_saving_ms=round(saving / 1e6, 3),
                saving_method="the ops' time less the slowest one's (fused, the chain reads and writes memory once)",
                fix="call this code inside a jax.jit-ed function (decorate the function it is in, or its caller), "
                "so that XLA fuses the ops and dispatches once",
                occurrences=int(executions),
                nodes=tuple(nodes[(file, line)]),
            )
        )
    return out


def _calls_below(profile: Profile, region: int, count: Any) -> tuple[float, bool]:
    """(the calls of the op's kernels below a region, whether a Python line is below it). An eager op's
    executable runs one kernel for its op (two executables of one primitive, for two shapes, add up);
    kernels XLA added without source (copies) are not counted."""
    calls = 0.0
    lines = False
    stack = [region]
    while stack:
        node = stack.pop()
        f = profile.frame_of(node)
        if f.kind is FrameKind.PYTHON:
            lines = True
        elif f.kind is FrameKind.KERNEL:
            calls += float(count[node])
            continue
        elif f.kind is FrameKind.SCOPE and f.name == NO_SOURCE:
            continue
        stack.extend(profile.children[node])
    return calls, lines
