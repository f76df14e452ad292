"""What a view's header says about its profile: where it came from, when, on what, how long, and
what ``time`` means in it. Pure; read from the metadata, the tree and the timeline."""

from __future__ import annotations

import datetime as dt
import os
import shlex
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..collect.checkpoint import abrupt_note
from ..model import FrameKind, Profile
from ..model.devices import devices_of
from .native_note import native_note


@dataclass(frozen=True)
class Summary:
    source: str  # "program: train.py --steps 5" or "trace: rank0.json.gz"
    date: str | None  # UTC, as precise as the source knows it
    host: str | None
    devices: tuple[str, ...]  # "NVIDIA H100 80GB HBM3", "cpu x86_64 (2 cores)"
    rank: str | None  # "rank 0 of 8"
    wall_ns: float | None  # first to last event of the timeline, when there is one
    time_meaning: str  # what time_ns is in this profile
    time_ns: float
    user_ns: float  # time with a user line above it
    coverage: str | None = None  # a live run that recorded part of itself: how much, and why
    ended: str | None = None  # a checkpoint of a killed run: "ended abruptly: recorded up to …"
    native: str | None = None  # run --native: what was sampled, or why not (native_note.py)

    @property
    def user_share(self) -> float | None:
        return self.user_ns / self.time_ns if self.time_ns else None


def _date(md: dict[str, Any]) -> str | None:
    start = md.get("start_time")
    if isinstance(start, (int, float)) and start > 0:
        return dt.datetime.fromtimestamp(float(start), dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    base = md.get("baseTimeNanoseconds")
    if isinstance(base, (int, float)) and base > 0:  # Kineto's base is rounded: a day at best
        return dt.datetime.fromtimestamp(float(base) / 1e9, dt.UTC).strftime("%Y-%m-%d")
    return None


def _devices(md: dict[str, Any]) -> tuple[str, ...]:
    names: list[str] = []
    for d in devices_of(md):
        name = d.name
        if d.type == "cpu":
            name = f"cpu {name or 'device'}" + (f" ({d.cores} cores)" if d.cores else "")
        elif not name:
            vendor = d.get("device_vendor")
            name = f"{vendor} GPU" if vendor else d.type or d.id
        names.append(name)
    # one entry per kind of device: "NVIDIA B200 ×8"
    return tuple(f"{n} ×{names.count(n)}" if names.count(n) > 1 else n for n in dict.fromkeys(names))


def _source(md: dict[str, Any]) -> str:
    cmd = md.get("command")
    if isinstance(cmd, list) and cmd:
        return "program: " + shlex.join(str(c) for c in cmd)
    src = md.get("source")
    if isinstance(src, dict) and src.get("path"):
        return f"trace: {os.path.basename(str(src['path']))}"
    ranks = md.get("ranks")
    if isinstance(ranks, list) and ranks:
        return f"{len(ranks)} ranks merged"
    return "profile"


def _wall(profile: Profile) -> float | None:
    """Wall time: ``metadata["wall_ns"]`` when the collector recorded it, else the timeline's span."""
    recorded = profile.metadata.get("wall_ns")
    if isinstance(recorded, (int, float)) and recorded > 0:
        return float(recorded)
    tl = profile.timeline
    span = tl.span_ns() if tl is not None else None
    return None if span is None else float(span)


def coverage_note(md: dict[str, Any]) -> str | None:
    """What a live run left out, in words: "recorded X of Y s (N of M steps whole): which parts, why"; None
    when it recorded (nearly) all of the program. Y is the program's own time; kernelscope's cost is said
    apart."""
    cov = md.get("coverage")
    if not isinstance(cov, dict):
        return None
    run = float(cov.get("run_seconds") or 0.0)
    program = float(cov.get("program_seconds", run) or 0.0)
    rec = min(float(cov.get("recorded_seconds") or 0.0), program)
    sampled = bool(cov.get("budget_holds"))
    compiling = float(cov.get("compile_seconds") or 0.0)  # torch.compile compiling: never recorded
    importing = float(cov.get("import_seconds") or 0.0)  # importing torch's compiler: never recorded
    parts = cov.get("parts") if isinstance(cov.get("parts"), dict) else None
    partial = int(parts.get("partial_steps") or 0) if parts else 0
    if not sampled and not partial and (program <= 0 or rec >= COMPLETE_SHARE * (program - compiling - importing)):
        return None
    steps = int(cov.get("steps") or 0)
    whole = int(cov.get("recorded_steps") or 0)
    of_steps = f", {whole} of {steps} steps whole" if steps else ""
    share = f" ({100 * rec / program:.0f}%{of_steps})" if program > 0 else ""
    cost = float(cov.get("overhead_seconds") or 0.0)
    if sampled:
        budget = float(cov.get("max_overhead") or 0.0)
        why = f"a sample, kept by the {100 * budget:g}% overhead budget (run --max-overhead 0 to record everything)"
        if whole:
            why += "; per-step values are of the whole steps recorded"
    else:
        asked = _asked(md)
        missed = cov.get("missed")
        why = asked or str(missed or "recording could not resume where the program was")
        recording = md.get("recording")
        if rec <= 0 and isinstance(recording, dict) and recording.get("last_decision") == "not started":
            why = "the program ran no torch op or module call from its own code"  # (e.g. it stopped at its arguments)
        if asked and missed:
            why += f"; {missed}"
    if partial:
        because = (
            "one step costs more to record than the budget allows"
            if sampled
            else "their windows were lost or could not begin at the step"
            if cov.get("lost_windows") or cov.get("missed")
            else "recording could not begin at the step"
        )
        why += f"; {partial} step(s) recorded in part ({because})"
    left = [f"{_secs(compiling)} s compiling with torch.compile"] if compiling >= 0.05 else []
    if importing >= 0.05:  # (torch.optim loads torch._dynamo on a first step: a program need not compile)
        names = cov.get("imported")
        what = ", ".join(str(n) for n in names[:3]) if isinstance(names, list) and names else "torch._dynamo"
        left.append(f"{_secs(importing)} s importing modules ({what})")
    unrecorded = f" ({' and '.join(left)}, not recorded)" if left else ""
    named = f"; {_parts(parts)}" if parts and (sampled or _asked(md)) else ""
    behind = float(cov.get("background_fold_cpu_seconds") or 0.0)
    beside = f" (and {_secs(behind)} s of CPU folding beside the program)" if behind >= 0.05 else ""
    return (
        f"recorded {_secs(rec)} of {_secs(program)} s{share}{unrecorded}{named}: {why}; "
        f"kernelscope's own cost {_secs(cost)} s{beside}"
    )


def _asked(md: dict[str, Any]) -> str | None:
    """What the run's options asked to record (``--steps``, ``--skip-first``, ``--duration``, ``--schedule``),
    in words; None when they asked for everything."""
    rec = md.get("recording")
    plan = rec.get("plan") if isinstance(rec, dict) else None
    if not isinstance(plan, dict):
        return None
    asked: list[str] = []
    if plan.get("skip_first"):
        asked.append(f"--skip-first {plan['skip_first']}")
    if plan.get("steps") is not None:
        asked.append(f"--steps {plan['steps']}")
    if plan.get("duration_s") is not None:
        asked.append(f"--duration {plan['duration_s']:g}")
    sched = plan.get("schedule")
    if isinstance(sched, dict):
        asked.append("--schedule " + ",".join(f"{k}={v}" for k, v in sched.items()))
    return f"as asked ({' '.join(asked)})" if asked else None


def _parts(parts: dict[str, Any]) -> str:
    """Which parts of the run the profile holds: "set-up in part, steps 1-4 and 27, the tail whole"."""
    words = {"whole": "whole", "part": "in part"}
    out: list[str] = []
    before = parts.get("before_first_step")
    if before in words:
        out.append(f"set-up and step 0 {words[before]}")
    ranges = [r for r in parts.get("whole_steps") or [] if isinstance(r, list) and len(r) == 2]
    if ranges:
        shown = [f"{a}" if a == b else f"{a}-{b}" for a, b in ranges[:4]]
        more = f" and {len(ranges) - 4} more ranges" if len(ranges) > 4 else ""
        one = len(ranges) == 1 and ranges[0][0] == ranges[0][1]
        out.append(("step " if one else "steps ") + ", ".join(shown) + more)
    tail = parts.get("tail")
    if tail in words:
        out.append(f"after the last step {words[tail]}")
    return "holds " + ", ".join(out) if out else "holds no whole step"


def _secs(seconds: float) -> str:
    """Seconds to two decimals below one second (a short run's 0.03 s is not "0.0"), else to one."""
    return f"{seconds:.2f}" if seconds < 0.995 else f"{seconds:.1f}"


# A live run that recorded at least this share of the program's time says nothing about coverage.
COMPLETE_SHARE = 0.9


def time_meaning(profile: Profile) -> str:
    if profile.metadata.get("time_source") == "triton-interpreter":
        return "Triton interpreter wall time per launch (kernels ran on the CPU; not GPU time)"
    if profile.metadata.get("device_run") is False:
        return "CPU op self time (no GPU in this run)"
    has_kernels = any(f.kind is FrameKind.KERNEL and f.device != "cpu" for f in profile.frames)
    if has_kernels:
        return "GPU kernel time, summed over streams (not wall time)"
    return "op self time"


def user_time(profile: Profile) -> float:
    """time_ns that has a Python (user) frame on its path."""
    is_py = np.asarray([f.kind is FrameKind.PYTHON for f in profile.frames], dtype=bool)
    if not len(profile):
        return 0.0
    under = is_py[profile.frame]
    par = profile.parent.tolist()
    for node in range(1, len(profile)):
        if under[par[node]]:
            under[node] = True
    return float(profile.exclusive("time_ns")[under].sum())


def summarize(profile: Profile) -> Summary:
    md = profile.metadata
    rank = None
    world = md.get("world_size")
    ranks = md.get("ranks")
    if isinstance(ranks, list) and ranks:
        numbers = [str(r.get("rank", "?")) for r in ranks if isinstance(r, dict)]
        rank = f"ranks {', '.join(numbers)}" + (f" of {world}" if world else "")
    elif isinstance(world, int) and world > 1:
        rank = f"rank {md.get('rank', '?')} of {world}"
    host = md.get("host")
    return Summary(
        source=_source(md),
        date=_date(md),
        host=str(host) if host else None,
        devices=_devices(md),
        rank=rank,
        wall_ns=_wall(profile),
        time_meaning=time_meaning(profile),
        time_ns=profile.total("time_ns"),
        user_ns=user_time(profile),
        coverage=coverage_note(md),
        ended=abrupt_note(md),
        native=native_note(md),
    )


def device_names(profile: Profile) -> dict[str, str]:
    """A display name per timeline device: ``cuda:2`` → ``GPU 2 (AMD Instinct MI300X)``.

    PyTorch calls every GPU ``cuda`` (ROCm too); the trace's device properties say what it was.
    Devices the properties do not name keep their trace name.
    """
    tl = profile.timeline
    if tl is None:
        return {}
    by_id = {d.index: d.name for d in devices_of(profile.metadata) if d.type == "cuda" and d.index >= 0 and d.name}
    out: dict[str, str] = {}
    for dev in {t.device for t in tl.tracks}:
        rank, _, local = dev.rpartition("/")
        kind, _, index = local.partition(":")
        if kind != "cuda" or not index.isdigit() or int(index) not in by_id:
            continue  # unknown: keep the trace's own name
        name = f"GPU {index} ({by_id[int(index)]})"
        out[dev] = f"{rank} {name}" if rank else name
    return out
