"""XLA (JAX) host transfers per user line: host callbacks inside jitted code (``jax.pure_callback``,
``io_callback``, ``jax.debug.callback`` / ``jax.debug.print``), device↔host copies on a GPU XPlane, and
repeated reads of device arrays on the host (``np.asarray``, ``float``, ``jax.device_get`` in a loop).

What is recorded (jax 0.10.2): a callback is an HLO custom call whose op is the callback primitive, on XLA:CPU
one thunk whose time is the Python function's; on a GPU its operands are copied to the host and its results
back (memcpy events). Host reads leave only host-thread events without a line in an XPlane
(``np.asarray(jax.Array)``, ``ArrayImpl.copy_to_host_async``): a live run notes their lines
(``collect.jax_reads``, ``metadata["host_reads"]``); an imported XPlane has none.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

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
    "a JAX program moves data between the device and the host at a line: a host callback inside jitted code "
    "(its operands to the host and its results back, the program waits for Python), device↔host copies, or "
    "reads of device arrays on the host once a step",
    thresholds={
        "min_ms": Threshold(0.5, "report a line whose callbacks, copies and reads took at least this"),
        "warn_pct": Threshold(1.0, "warn when they are at least this % of the measured time"),
        "min_reads": Threshold(3, "report host reads of device arrays at a line read at least this often, ..."),
        "per_call": Threshold(0.5, "... and at least this many times per call of the most-called jitted function"),
        "min_wait_ms": Threshold(0.1, "... and whose reads took this long each on average (they waited)"),
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
    # per line: [callback calls, callback ns, copies, copy ns, host reads, read ns]
    per_line: dict[str | None, list[float]] = defaultdict(lambda: [0.0] * 6)
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
    for row in _looped_reads(profile, t):
        acc = per_line[f"{row.get('file')}:{int(row.get('line') or 0)}"]
        acc[4] += int(row["reads"])
        acc[5] += float(row.get("ns") or 0.0)
    out: list[Finding] = []
    for key, (calls, cb_ns, copies, copy_ns, n_reads, read_ns) in sorted(
        per_line.items(), key=lambda kv: -(kv[1][1] + kv[1][3] + kv[1][5])
    ):
        time = cb_ns + copy_ns + read_ns
        file, line = split_line(key)
        if time < t["min_ms"] * 1e6 or not file:
            continue
        what = []
        if calls:
            kinds = ", ".join(sorted(n for n in names[key] if n in CALLBACKS))
            what.append(f"{int(calls)} host callback call(s) ({kinds}) taking {ms(cb_ns)} ms")
        if copies:
            what.append(f"{int(copies)} device↔host copies taking {ms(copy_ns)} ms")
        why = []
        if calls:
            why.append(
                "each callback copies its operands to the host, waits for Python and copies the results back; "
                "the compiled program cannot fuse across it"
            )
        if n_reads:
            what.append(
                f"{int(n_reads)} host reads of device arrays (np.asarray, float, device_get) taking {ms(read_ns)} ms"
            )
            why.append("each read waits for the device to finish the array, then copies it: the host cannot run ahead")
        where = "inside jitted code " if calls or copies else ""
        moved = cb_ns + copy_ns  # what moving the work into XLA or out of the step can save; a read's wait
        # is saved only where the host has other work to overlap (unknown here): reads alone give no saving
        out.append(
            Finding(
                rule="xla_host_transfer",
                severity=Severity.WARNING if 100.0 * moved / total >= t["warn_pct"] else Severity.INFO,
                title=f"host transfers {where}at {key} ({ms(time):,} ms)",
                evidence=f"{'; '.join(what)} ({100.0 * time / total:.1f}% of the measured time); {'; '.join(why)}",
                file=file,
                line=line,
                estimated_saving_ms=ms(moved) if moved else None,
                saving_method="the callbacks' and copies' measured time (an upper bound: work moved into XLA ops "
                "still costs its compute)"
                if moved
                else "",
                fix="compute the value with jnp ops inside the jitted function, or call the host code once "
                "outside the step (jax.debug.print in a hot loop: print less often)"
                if calls
                else "keep per-step values on the device and read them once after the loop (stack them, or "
                "jax.device_get every N steps)",
                occurrences=int(calls + copies + n_reads),
                nodes=tuple(nodes[key]),
            )
        )
    return out


def _looped_reads(profile: Profile, t: Thresholds) -> list[dict[str, Any]]:
    """Host-read rows of lines that read once a step (the count, against the most-called jitted function of the
    program) and waited (a copy of a finished array takes microseconds; a loss list read once after the loop
    is not a per-step wait)."""
    reads = profile.metadata.get("host_reads")
    calls = profile.metadata.get("jit_calls")
    most = max((int(v) for v in calls.values()), default=0) if isinstance(calls, dict) else 0
    out = []
    for row in reads if isinstance(reads, list) else []:
        if not isinstance(row, dict):
            continue
        n = int(row.get("reads") or 0)
        if n >= max(t["min_reads"], t["per_call"] * most) and float(row.get("ns") or 0.0) / n >= t["min_wait_ms"] * 1e6:
            out.append(row)
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
