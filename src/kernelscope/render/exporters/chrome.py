"""Chrome / Perfetto trace JSON (the Trace Event Format that chrome://tracing, Perfetto and Kineto use).

With a timeline, every row becomes a complete (``"X"``) event on its own track: host ops on
their thread (they nest by time, as recorded), runtime calls on the thread that made them,
kernels, memcpys and memsets on their stream. Processes are devices (``cpu`` and each GPU),
threads are the timeline's tracks, both named with ``"M"`` metadata events. A flow
(``"s"``/``"f"``, ``cat: ac2g``, as Kineto writes them) joins each runtime call to the device
work it launched (same ``correlation``). Every event's ``args`` hold its ``correlation``
(when it has one) and ``stack``, the labels of its calling context from the outermost frame.
Categories are Kineto's (``cpu_op``, ``cuda_runtime``, ``kernel``, ``gpu_memcpy``,
``gpu_memset``), so kernelscope re-imports the file with the same per-kernel and per-op totals.
The timeline keeps no runtime-call names: those events are named ``runtime`` (``sync`` for
synchronisations).

A profile without a timeline (a Proton import, a merged profile) is laid out end to end: each
frame is one interval as long as its inclusive ``time_ns`` (its ``cpu_time_ns`` when it has no
device time), children one after another inside their parent on one host thread, kernels on
their stream under a launch of the op above them. Durations are then totals, not calls.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any, TextIO

from ...model import FrameKind, Profile
from ...model.timeline import Category, Timeline, Track
from .registry import Exporter, register

_CAT = {
    Category.KERNEL: "kernel",
    Category.COMM: "kernel",
    Category.MEMCPY: "gpu_memcpy",
    Category.MEMSET: "gpu_memset",
    Category.RUNTIME: "cuda_runtime",
    Category.SYNC: "cuda_runtime",
    Category.OP: "cpu_op",
}
_DEVICE_SIDE = frozenset({Category.KERNEL, Category.COMM, Category.MEMCPY, Category.MEMSET})
_NUMBER = re.compile(r"(\d+)$")
_GPU = re.compile(r"(?:cuda|hip|rocm|gpu):(\d+)", re.IGNORECASE)
HOST_PID_BASE = 100_000  # host processes get pids above any device index


def _pids(tracks: tuple[Track, ...]) -> dict[str, int]:
    """A GPU ``cuda:N`` is process N (as in Kineto traces); every other device gets a pid of its own."""
    out: dict[str, int] = {}
    for i, device in enumerate(sorted({t.device for t in tracks})):
        m = _GPU.fullmatch(device)
        out[device] = int(m.group(1)) if m else HOST_PID_BASE + i
    return out


def _tid(track: Track, index: int) -> int:
    m = _NUMBER.search(track.name)
    return int(m.group(1)) if m else index


def _us(ns: float) -> int | float:
    """Microseconds; whole ones as integers, so that readers do not round large timestamps."""
    whole, rest = divmod(int(ns), 1000)
    return whole if rest == 0 and ns == int(ns) else ns / 1000.0


class _Stacks:
    """Labels of each node's calling context, outermost first, computed once per node."""

    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        self.labels = [f.label() for f in profile.frames]
        self.cache: dict[int, list[str]] = {}

    def __call__(self, node: int) -> list[str]:
        got = self.cache.get(node)
        if got is None:
            p = self.profile
            got = self.cache[node] = [self.labels[p.frame[n]] for n in reversed(list(p.ancestors(node)))]
        return got


def _metadata_events(tracks: tuple[Track, ...], pids: dict[str, int]) -> Iterator[dict[str, Any]]:
    for device, pid in sorted(pids.items(), key=lambda kv: kv[1]):
        yield {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": device}}
        yield {"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": pid}}
    for i, t in enumerate(tracks):
        yield {"ph": "M", "name": "thread_name", "pid": pids[t.device], "tid": _tid(t, i), "args": {"name": t.name}}


def timeline_events(profile: Profile, tl: Timeline) -> Iterator[dict[str, Any]]:
    pids = _pids(tl.tracks)
    yield from _metadata_events(tl.tracks, pids)
    stacks = _Stacks(profile)
    labels = stacks.labels
    node, track, start, dur = tl.node.tolist(), tl.track.tolist(), tl.start_ns.tolist(), tl.dur_ns.tolist()
    cat, corr = tl.category.tolist(), tl.correlation.tolist()
    launches: set[int] = {c for c, k in zip(corr, cat, strict=True) if c >= 0 and Category(k) in _DEVICE_SIDE}
    for i in sorted(range(len(node)), key=lambda i: (start[i], -dur[i])):
        t = tl.tracks[track[i]]
        kind = Category(cat[i])
        pid, tid = pids[t.device], _tid(t, track[i])
        args: dict[str, Any] = {"stack": stacks(node[i])}
        if corr[i] >= 0:
            args["correlation"] = corr[i]
        if kind in _DEVICE_SIDE:
            name = labels[profile.frame[node[i]]]
            gpu = _GPU.search(t.device.rpartition("/")[2])
            if gpu is not None:
                args["device"] = int(gpu.group(1))
            m = _NUMBER.search(t.name)
            if m is not None:
                args["stream"] = int(m.group(1))
        elif kind is Category.OP:
            name = labels[profile.frame[node[i]]]
        else:
            name = "sync" if kind is Category.SYNC else "runtime"
        event = {"ph": "X", "cat": _CAT[kind], "name": name, "pid": pid, "tid": tid, "ts": _us(start[i])}
        event["dur"] = _us(dur[i])
        event["args"] = args
        yield event
        if corr[i] in launches:
            flow = {"ph": "s" if kind not in _DEVICE_SIDE else "f", "cat": "ac2g", "name": "ac2g", "id": corr[i]}
            flow.update({"pid": pid, "tid": tid, "ts": _us(start[i])})
            if kind in _DEVICE_SIDE:
                flow["bp"] = "e"
            yield flow


def layout_events(profile: Profile) -> Iterator[dict[str, Any]]:
    """The tree laid out end to end (see the module docstring) for profiles without a timeline."""
    time = profile.inclusive("time_ns")
    cpu = profile.inclusive("cpu_time_ns")
    width = [t if t > 0 else c for t, c in zip(time.tolist(), cpu.tolist(), strict=True)]
    stacks = _Stacks(profile)
    host = Track("thread 1", "cpu", "thread")
    tracks: dict[Track, int] = {host: 0}
    pending: list[tuple[int, float]] = [(0, 0.0)]
    events: list[dict[str, Any]] = []
    correlation = 0
    kids = profile.children
    while pending:
        node, start = pending.pop()
        frame = profile.frame_of(node)
        if node and width[node] > 0:
            args = {"stack": stacks(node)}
            if frame.kind is FrameKind.KERNEL or frame.kind is FrameKind.PART:
                correlation += 1
                device = frame.device or "cuda:0"
                stream = Track(f"stream {frame.stream if frame.stream >= 0 else 0}", device, "stream")
                tracks.setdefault(stream, len(tracks))
                events.append(_x("cuda_runtime", "runtime", host, start, 0.0, {"correlation": correlation}))
                events.append(
                    _x("kernel", frame.label(), stream, start, width[node], {**args, "correlation": correlation})
                )
            elif frame.kind is not FrameKind.ROOT:
                cat = {FrameKind.OP: "cpu_op", FrameKind.PYTHON: "python_function", FrameKind.NATIVE: "native"}.get(
                    frame.kind, "user_annotation"
                )
                events.append(_x(cat, frame.label(), host, start, width[node], args))
        if frame.kind is FrameKind.KERNEL:
            continue  # parts are estimates inside the kernel's own interval
        cursor = start
        for child in kids[node]:
            pending.append((child, cursor))
            cursor += width[child]
    ordered = tuple(tracks)
    pids = _pids(ordered)
    yield from _metadata_events(ordered, pids)
    for e in events:
        t: Track = e.pop("track")
        e["pid"], e["tid"] = pids[t.device], _tid(t, ordered.index(t))
        yield e


def _x(cat: str, name: str, track: Track, start_ns: float, dur_ns: float, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "ph": "X",
        "cat": cat,
        "name": name,
        "track": track,
        "ts": start_ns / 1000.0,
        "dur": dur_ns / 1000.0,
        "args": args,
    }


def dump(profile: Profile, fh: TextIO) -> None:
    tl = profile.timeline
    events = timeline_events(profile, tl) if tl is not None and len(tl) else layout_events(profile)
    fh.write('{"displayTimeUnit":"ns","otherData":{"exporter":"kernelscope"},"traceEvents":[\n')
    first = True
    for event in events:
        if not first:
            fh.write(",\n")
        first = False
        fh.write(json.dumps(event, ensure_ascii=False, allow_nan=False, separators=(",", ":")))
    fh.write("\n]}\n")


EXPORTER = register(
    Exporter(
        name="chrome",
        description="Chrome/Perfetto trace JSON (complete events per thread and stream, launch flows)",
        suffix=".trace.json",
        dump=dump,
    )
)
