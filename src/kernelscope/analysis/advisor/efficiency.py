"""Efficiency: fp32 GEMMs on SIMT cores where the GPU has tensor cores for TF32; GEMMs on misaligned shapes."""

from __future__ import annotations

import re
from collections import defaultdict

from ...model import FrameKind, Profile
from ...model.devices import devices_of
from ..context import ContextIndex
from . import WITH_TIMELINE, Finding, Severity, Threshold, Thresholds, rule
from ._devices import ELEMENT_BYTES, kernel_dtype
from ._evidence import ms, split_line

_FP32_GEMM = re.compile(r"sgemm")  # cuBLAS/cuDNN single-precision SIMT GEMMs
_TENSOR_CORE_ARCH = re.compile(r"^(?:void )?(?:ampere|sm_?[89]\d|hopper|blackwell|sm1\d\d)_", re.IGNORECASE)


def tensor_core_device(profile: Profile) -> str | None:
    """The name of a device with TF32 tensor cores (compute capability 8.0+), if the metadata says so."""
    for d in devices_of(profile.metadata):
        cc = d.compute_capability
        if cc is not None and cc[0] >= 8:
            return d.name or "a GPU with tensor cores"
    return None


@rule(
    "fp32_gemm",
    "single-precision GEMMs ran on SIMT cores where TF32 or bf16 tensor cores were available",
    thresholds={
        "min_ms": Threshold(0.5, "report a line whose fp32 GEMMs took at least this long"),
        "warn_pct": Threshold(2.0, "warn when they are at least this % of kernel time"),
        "tf32_speedup": Threshold(4.0, "assumed TF32 speed-up over fp32 SIMT (A100: 8× peak), for the estimate"),
    },
    applies=WITH_TIMELINE,
)
def fp32_gemm(profile: Profile, t: Thresholds) -> list[Finding]:
    device = tensor_core_device(profile)
    time = profile.exclusive("time_ns")
    count = profile.exclusive("count")
    total = profile.total("time_ns") or 1.0
    ctx = ContextIndex(profile)
    per_line: dict[str | None, list[float]] = defaultdict(lambda: [0.0, 0.0])
    names: dict[str | None, set[str]] = defaultdict(set)
    for node in range(1, len(profile)):
        f = profile.frame_of(node)
        if f.kind is not FrameKind.KERNEL or not _FP32_GEMM.search(f.name):
            continue
        if device is None and not _TENSOR_CORE_ARCH.match(f.name):
            continue  # no evidence that tensor cores were there
        acc = per_line[ctx.line(node)]
        acc[0] += time[node]
        acc[1] += count[node]
        names[ctx.line(node)].add(f.name.split("(")[0].removeprefix("void ")[:60])
    out: list[Finding] = []
    for place, (dur, calls) in sorted(per_line.items(), key=lambda kv: -kv[1][0]):
        if dur < t["min_ms"] * 1e6:
            continue
        share = 100.0 * dur / total
        file, line = split_line(place)
        out.append(
            Finding(
                rule="fp32_gemm",
                severity=Severity.WARNING if share >= t["warn_pct"] else Severity.INFO,
                title=f"fp32 GEMMs without tensor cores at {place or 'code without a user line'} ({ms(dur):,} ms)",
                evidence=f"{int(calls)} call(s) of {', '.join(sorted(names[place])[:3])}: {ms(dur)} ms "
                f"({share:.1f}% of kernel time) on {device or 'an Ampere-or-later GPU (from the kernel names)'}",
                file=file,
                line=line,
                estimated_saving_ms=ms(dur * (1.0 - 1.0 / max(t["tf32_speedup"], 1.0))),
                saving_method=f"their time at an assumed {t['tf32_speedup']:g}× TF32 speed-up",
                fix="torch.backends.cuda.matmul.allow_tf32 = True (torch.set_float32_matmul_precision('high')), "
                "or run the layer in bf16 autocast",
                occurrences=int(calls),
            )
        )
    return out


# CUTLASS/cuDNN kernels name the vector width they load with: ``..._align1``, ``..._alignc4`` (elements)
_ALIGN = re.compile(r"_align(?:c)?(\d+)\b")


def misalignment(name: str) -> tuple[str, int, int] | None:
    """(element type, the kernel's alignment, the full alignment) of a GEMM/conv kernel that loads with
    narrower vectors than 16 bytes; None when the name shows no alignment, no type, or full alignment."""
    m = _ALIGN.search(name)
    dtype = kernel_dtype(name)
    if m is None or dtype is None:
        return None
    full = 16 // ELEMENT_BYTES[dtype]
    align = int(m.group(1))
    return (dtype, align, full) if align < full else None


@rule(
    "misaligned_gemm",
    "GEMMs ran as kernels for misaligned shapes (a dimension not a multiple of 8 for fp16/bf16, 4 for tf32)",
    thresholds={
        "min_ms": Threshold(0.5, "report a line whose misaligned GEMM kernels took at least this long"),
        "warn_pct": Threshold(1.0, "warn when the saving is at least this % of kernel time"),
        "aligned_speedup": Threshold(2.0, "assumed speed-up of the aligned kernel, for the estimate"),
    },
    applies=WITH_TIMELINE,
)
def misaligned_gemm(profile: Profile, t: Thresholds) -> list[Finding]:
    """The profile keeps FLOPs and bytes, not shapes: the evidence is the kernel the library picked."""
    time = profile.exclusive("time_ns")
    count = profile.exclusive("count")
    total = profile.total("time_ns") or 1.0
    ctx = ContextIndex(profile)
    per_place: dict[tuple[str | None, str], list[float]] = defaultdict(lambda: [0.0, 0.0])
    kinds: dict[tuple[str | None, str], set[tuple[str, int, int]]] = defaultdict(set)
    nodes: dict[tuple[str | None, str], list[int]] = defaultdict(list)
    for node in range(1, len(profile)):
        f = profile.frame_of(node)
        if f.kind is not FrameKind.KERNEL or time[node] <= 0:
            continue
        bad = misalignment(f.name)
        if bad is None:
            continue
        key = (ctx.line(node), ctx.op(node) or "kernels without an op")
        per_place[key][0] += time[node]
        per_place[key][1] += count[node]
        kinds[key].add(bad)
        nodes[key].append(node)
    speedup = max(t["aligned_speedup"], 1.0)
    out: list[Finding] = []
    for (place, op), (dur, calls) in sorted(per_place.items(), key=lambda kv: -kv[1][0]):
        if dur < t["min_ms"] * 1e6:
            continue
        saving = dur * (1.0 - 1.0 / speedup)
        shown = ", ".join(f"{d} align{a} (full: align{full})" for d, a, full in sorted(kinds[(place, op)]))
        multiple = max(full for _, _, full in kinds[(place, op)])
        file, line = split_line(place)
        out.append(
            Finding(
                rule="misaligned_gemm",
                severity=Severity.WARNING if 100.0 * saving / total >= t["warn_pct"] else Severity.INFO,
                title=f"{op} at {place or 'code without a user line'} runs misaligned GEMM kernels ({ms(dur):,} ms)",
                evidence=f"{int(calls)} kernel call(s) built for {shown}: {ms(dur)} ms "
                f"({100.0 * dur / total:.1f}% of kernel time); the library picks these when a GEMM dimension "
                f"or leading stride is not a multiple of {multiple} elements",
                file=file,
                line=line,
                estimated_saving_ms=ms(saving),
                saving_method=f"their time at an assumed {speedup:g}× speed-up of the aligned kernel",
                fix=f"pad the odd dimension (sequence length, hidden, vocab or head size) to a multiple of "
                f"{multiple} (64 is better), or slice padded outputs back",
                occurrences=int(calls),
                nodes=tuple(nodes[(place, op)]),
            )
        )
    return out
