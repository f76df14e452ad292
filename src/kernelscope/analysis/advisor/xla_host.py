"""XLA (JAX) host transfers inside jitted code: host callbacks (``jax.pure_callback``, ``io_callback``,
``jax.debug.callback`` / ``jax.debug.print``) and, on a GPU XPlane, device↔host copies, per user line.

What XLA records (jax 0.10.2): a callback is an HLO custom call whose op is the callback primitive, on XLA:CPU
one thunk whose time is the Python function's; on a GPU its operands are copied to the host and its results
back (memcpy events). ``jax.device_get`` / ``np.asarray`` outside jit leave only host-thread events without
a line in an XPlane (``np.asarray(jax.Array)``, ``ArrayImpl.copy_to_host_async``): not judged here.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from ...model import FrameKind, Profile
from ...model.timeline import Category
from ..context import ContextIndex
from ..rows import device_rows
from . import Finding, Severity, Threshold, Thresholds, rule
from ._evidence import ms, split_line, time_metric

CALLBACKS = frozenset({"pure_callback", "io_callback", "debug_callback", "callback"})


@rule(
    "xla_host_transfer",
    "jitted JAX code moves data between the device and the host at a line: a host callback (its operands to "
    "the host and its results back, the program waits for Python) or device↔host copies",
    thresholds={
        "min_ms": Threshold(0.5, "report a line whose callbacks and copies took at least this"),
        "warn_pct": Threshold(1.0, "warn when they are at least this % of the measured time"),
    },
)
def xla_host_transfer(profile: Profile, t: Thresholds) -> list[Finding]:
    if profile.metadata.get("framework") != "jax":
        return []
    metric = time_metric(profile)
    inc = profile.inclusive(metric)
    count = profile.exclusive("count")
    total = profile.total(metric) or 1.0
    ctx = ContextIndex(profile)
    # per line: [callback calls, callback ns, copies, copy ns]
    per_line: dict[str | None, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])
    names: dict[str | None, set[str]] = defaultdict(set)
    nodes: dict[str | None, list[int]] = defaultdict(list)
    for node in range(1, len(profile)):
        f = profile.frame_of(node)
        if f.kind is FrameKind.OP and f.name in CALLBACKS and not _inside_callback(profile, node):
            key = ctx.line(node)
            acc = per_line[key]
            acc[0] += sum(float(count[k]) for k in profile.children[node]) or float(count[node])
            acc[1] += float(inc[node])
            names[key].add(f.name)
            nodes[key].append(node)
    tl = profile.timeline
    if tl is not None and len(tl):
        rows = np.flatnonzero(device_rows(tl) & (tl.category == int(Category.MEMCPY)))
        for node, dur in zip(tl.node[rows].tolist(), tl.dur_ns[rows].tolist(), strict=True):
            if _under_callback(profile, int(node)):
                continue  # a callback's own copies: counted with the callback
            key = ctx.line(int(node))
            acc = per_line[key]
            acc[2] += 1
            acc[3] += dur
            names[key].add(profile.frame_of(int(node)).name)
            nodes[key].append(int(node))
    out: list[Finding] = []
    for key, (calls, cb_ns, copies, copy_ns) in sorted(per_line.items(), key=lambda kv: -(kv[1][1] + kv[1][3])):
        time = cb_ns + copy_ns
        file, line = split_line(key)
        if time < t["min_ms"] * 1e6 or not file:
            continue
        what = []
        if calls:
            kinds = ", ".join(sorted(n for n in names[key] if n in CALLBACKS))
            what.append(f"{int(calls)} host callback call(s) ({kinds}) taking {ms(cb_ns)} ms")
        if copies:
            what.append(f"{int(copies)} device↔host copies taking {ms(copy_ns)} ms")
        out.append(
            Finding(
                rule="xla_host_transfer",
                severity=Severity.WARNING if 100.0 * time / total >= t["warn_pct"] else Severity.INFO,
                title=f"host transfers inside jitted code at {key} ({ms(time):,} ms)",
                evidence=f"{'; '.join(what)} ({100.0 * time / total:.1f}% of the measured time). Each callback "
                "copies its operands to the host, waits for Python and copies the results back; the compiled "
                "program cannot fuse across it",
                file=file,
                line=line,
                estimated_saving_ms=ms(time),
                saving_method="the callbacks' and copies' measured time (an upper bound: work moved into XLA "
                "ops still costs its compute)",
                fix="compute the value with jnp ops inside the jitted function, or call the host code once "
                "outside the step (jax.debug.print in a hot loop: print less often)",
                occurrences=int(calls + copies),
                nodes=tuple(nodes[key]),
            )
        )
    return out


def _inside_callback(profile: Profile, node: int) -> bool:
    parent = int(profile.parent[node])
    while parent > 0:
        if profile.frame_of(parent).kind is FrameKind.OP and profile.frame_of(parent).name in CALLBACKS:
            return True
        parent = int(profile.parent[parent])
    return False


def _under_callback(profile: Profile, node: int) -> bool:
    return (profile.frame_of(node).kind is FrameKind.OP and profile.frame_of(node).name in CALLBACKS) or (
        _inside_callback(profile, node)
    )
