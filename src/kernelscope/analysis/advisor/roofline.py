"""Efficiency: hot ops far below the device's roofline.

An op's FLOPs and bytes (computed from its input shapes: ``attribute.costs``) give the least time the
device could take for it: ``max(flops / peak FLOP/s, bytes / bandwidth)``, with the peaks from the
bundled table (``_devices``) and the FLOP roof of the element type its kernels' names show (fp32,
the lowest, when they show none). The bytes are the op's compulsory traffic (inputs read once,
output written once), so the bound is a lower bound and the efficiency an upper bound: a flagged op
is at least that far from the roof. CPU-only runs are skipped: no peak is known or measured there.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field

from ...model import FrameKind, Profile
from ..context import ContextIndex
from . import WITH_TIMELINE, Finding, Severity, Threshold, Thresholds, rule
from ._devices import DevicePeak, device_peak, kernel_dtype
from ._evidence import ms, split_line


@dataclass
class _Hot:
    time: float = 0.0
    flops: float = 0.0
    nbytes: float = 0.0
    calls: float = 0.0
    dtypes: set[str] = field(default_factory=set)
    nodes: list[int] = field(default_factory=list)


@rule(
    "roofline",
    "a hot op ran far below the device's roofline (peak FLOP/s or memory bandwidth for its FLOPs and bytes)",
    thresholds={
        "min_pct": Threshold(2.0, "consider ops with at least this % of the kernel time"),
        "max_efficiency": Threshold(0.3, "report an op that reaches at most this fraction of its roofline bound"),
        "target_efficiency": Threshold(0.7, "the fraction of the roofline a tuned kernel reaches, for the saving"),
        "warn_pct": Threshold(10.0, "warn when the saving is at least this % of the kernel time"),
    },
    applies=WITH_TIMELINE,
)
def roofline(profile: Profile, t: Thresholds) -> list[Finding]:
    known = device_peak(profile.metadata)
    if known is None or "time_ns" not in profile.metrics:
        return []
    device, peak = known
    hot = _hot_ops(profile)
    total = profile.total("time_ns") or 1.0
    out: list[Finding] = []
    for (place, op), h in hot.items():
        if h.time <= 0 or 100.0 * h.time / total < t["min_pct"]:
            continue
        dtype = _one(h.dtypes)
        bound = max(h.flops / peak.peak_flops(dtype), h.nbytes / (peak.bandwidth * 1e12)) * 1e9  # ns
        efficiency = bound / h.time
        if bound <= 0 or efficiency > t["max_efficiency"]:
            continue
        saving = max(h.time - bound / max(t["target_efficiency"], 1e-3), 0.0)
        file, line = split_line(place)
        out.append(_finding(device, peak, op, place, file, line, h, dtype, bound, saving, total, t))
    return out


def _hot_ops(profile: Profile) -> dict[tuple[str | None, str], _Hot]:
    """Outermost ops with FLOPs or bytes, per (user line, op): their kernel time, FLOPs, bytes, kernel types."""
    flops = profile.inclusive("flops") if "flops" in profile.metrics else None
    nbytes = profile.inclusive("bytes") if "bytes" in profile.metrics else None
    count = profile.exclusive("count") if "count" in profile.metrics else None
    if flops is None and nbytes is None:
        return {}
    kids = profile.children
    par = profile.parent
    ctx = ContextIndex(profile)
    out: dict[tuple[str | None, str], _Hot] = defaultdict(_Hot)
    own_time = profile.exclusive("time_ns")
    for node in range(1, len(profile)):
        f = profile.frame_of(node)
        if f.kind is not FrameKind.OP or not f.name.startswith("aten::") or _SKIP.search(f.name):
            continue  # the cost model (attribute.costs) is ATen's: a custom op's inputs are not its traffic
        if not _outermost(profile, int(par[node])):
            continue
        fl = float(flops[node]) if flops is not None else 0.0
        nb = float(nbytes[node]) if nbytes is not None else 0.0
        if fl <= 0 and nb <= 0:
            continue
        # device time of its compute kernels: copies over PCIe and collectives have other roofs
        dtypes: set[str] = set()
        kernel_ns = 0.0
        stack = list(kids[node])
        while stack:
            k = stack.pop()
            kf = profile.frame_of(k)
            if kf.kind is FrameKind.KERNEL and not _NOT_COMPUTE.search(kf.name):
                kernel_ns += float(own_time[k])
                dtype = kernel_dtype(kf.name)
                if dtype:
                    dtypes.add(dtype)
            stack.extend(kids[k])
        if kernel_ns <= 0:
            continue
        h = out[(ctx.line(node), f.name)]
        h.time += kernel_ns
        h.flops += fl
        h.nbytes += nb
        h.calls += float(count[node]) if count is not None else 0.0
        h.dtypes |= dtypes
        h.nodes.append(node)
    return out


_WRAPPER = re.compile(r"Backward\d*$|^autograd::|AccumulateGrad|^CompiledFunction")
# wrappers, and SDPA's flash/efficient paths: their FLOPs land on ``_flash_attention_forward``, whose inputs
# are laid out [batch, seq, heads, dim], which the SDPA cost rule reads as [batch, heads, seq, dim] (FLOPs too
# low by seq/heads: a false alarm here); left out until attribute.costs reads that layout
_SKIP = re.compile(_WRAPPER.pattern + r"|flash_attention|efficient_attention")
_NOT_COMPUTE = re.compile(r"^Memcpy|^Memset|nccl|rccl|AllReduce|AllGather|ReduceScatter|SendRecv", re.IGNORECASE)


def _outermost(profile: Profile, parent: int) -> bool:
    """No real op above (autograd nodes are wrappers: a checkpoint's recomputation runs inside one)."""
    while parent > 0:
        f = profile.frame_of(parent)
        if f.kind is not FrameKind.OP:
            return True
        if not _WRAPPER.search(f.name):
            return False
        parent = int(profile.parent[parent])
    return True


def _one(dtypes: set[str]) -> str | None:
    """The element type when the kernels agree; else None (the fp32 roof: the lowest, so no false alarm)."""
    return next(iter(dtypes)) if len(dtypes) == 1 else None


def _finding(
    device: str,
    peak: DevicePeak,
    op: str,
    place: str | None,
    file: str | None,
    line: int | None,
    h: _Hot,
    dtype: str | None,
    bound: float,
    saving: float,
    total: float,
    t: Thresholds,
) -> Finding:
    seconds = h.time / 1e9
    achieved = f"{h.flops / seconds / 1e12:,.1f} TFLOP/s, {h.nbytes / seconds / 1e12:,.2f} TB/s"
    intensity = h.flops / h.nbytes if h.nbytes else float("inf")
    ridge = peak.peak_flops(dtype) / (peak.bandwidth * 1e12)
    limit = "memory-bound" if intensity < ridge else "compute-bound"
    roof = f"{peak.peak_flops(dtype) / 1e12:,.0f} TFLOP/s ({dtype or 'fp32, no element type in its kernel names'})"
    return Finding(
        rule="roofline",
        severity=Severity.WARNING if 100.0 * saving / total >= t["warn_pct"] else Severity.INFO,
        title=f"{op} at {place or 'code without a user line'} reaches {100.0 * bound / h.time:.0f}% of the "
        f"{peak.name} roofline ({ms(h.time):,} ms)",
        evidence=f"{int(h.calls)} call(s): {h.flops / 1e9:,.1f} GFLOP, {h.nbytes / 1e9:,.2f} GB in {ms(h.time)} ms "
        f"= {achieved}; {limit} (intensity {intensity:,.1f} FLOP/B, ridge {ridge:,.0f}); roofline bound "
        f"{ms(bound)} ms on {device} (peaks: {roof}, {peak.bandwidth:g} TB/s, from the bundled datasheet table)",
        file=file,
        line=line,
        estimated_saving_ms=ms(saving),
        saving_method=f"its time less the roofline bound at {t['target_efficiency']:g} of peak (what tuned kernels "
        "reach); bytes are compulsory traffic, so the bound is a lower bound",
        fix="memory-bound: fuse it with its neighbours (torch.compile) or use a fused kernel; compute-bound: use "
        "bf16/fp16 or TF32, shapes that are multiples of 8/64, larger batches per kernel",
        occurrences=int(h.calls) or 1,
        nodes=tuple(h.nodes),
    )
