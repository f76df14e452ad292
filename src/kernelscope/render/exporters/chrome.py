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

A profile without a timeline (a live run, a Proton import, a merged profile) is laid out as calls on
one host thread (``chrome_layout``): each frame as many events as it has calls, their durations adding
up to its inclusive host time, children inside their parent, device kernels on their stream under a
launch; re-imported, it gives back the profile's ``cpu_time_ns``, ``time_ns`` and ``count`` totals.
Durations are then shares of totals, not the calls' own.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any, TextIO

import numpy as np

from ...model import Profile
from ...model.timeline import Category, Timeline, Track
from .chrome_host import HostEvents
from .chrome_layout import lay_out
from .registry import Exporter, register

_CAT = {
    Category.KERNEL: "kernel",
    Category.COMM: "kernel",
    Category.MEMCPY: "gpu_memcpy",
    Category.MEMSET: "gpu_memset",
    Category.RUNTIME: "cuda_runtime",
    Category.SYNC: "cuda_runtime",
    Category.OP: "cpu_op",
    Category.FRAME: "user_annotation",
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
    host_events = HostEvents(profile)
    for i in sorted(range(len(node)), key=lambda i: (start[i], -dur[i])):
        t = tl.tracks[track[i]]
        kind = Category(cat[i])
        pid, tid = pids[t.device], _tid(t, track[i])
        args: dict[str, Any] = {"stack": stacks(node[i])}
        cat_name = ""
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
        elif kind is Category.OP or kind is Category.FRAME:
            cat_name, name, more = host_events(node[i])
            args.update(more)
        else:
            name = "sync" if kind is Category.SYNC else "runtime"
        event = {"ph": "X", "cat": cat_name or _CAT[kind], "name": name, "pid": pid, "tid": tid, "ts": _us(start[i])}
        event["dur"] = _us(dur[i])
        event["args"] = args
        yield event
        if corr[i] in launches:
            flow = {"ph": "s" if kind not in _DEVICE_SIDE else "f", "cat": "ac2g", "name": "ac2g", "id": corr[i]}
            flow.update({"pid": pid, "tid": tid, "ts": _us(start[i])})
            if kind in _DEVICE_SIDE:
                flow["bp"] = "e"
            yield flow


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def layout_events(profile: Profile) -> Iterator[dict[str, Any] | str]:
    """The tree laid out as calls (``chrome_layout``) for profiles without a timeline. A frame's events differ
    only in their times: each frame's JSON is written once and its calls' events are made from it as text."""
    laid = lay_out(profile)
    stacks = _Stacks(profile)
    host = Track("thread 1", "cpu", "thread")
    tracks: dict[Track, int] = {host: 0}
    streams: dict[int, Track] = {}
    for node in dict.fromkeys(laid.device_node.tolist()):
        frame = profile.frame_of(node)
        stream = Track(f"stream {max(frame.stream, 0)}", frame.device or "cuda:0", "stream")
        streams[node] = stream
        tracks.setdefault(stream, len(tracks))
    ordered = tuple(tracks)
    pids = _pids(ordered)
    yield from _metadata_events(ordered, pids)
    on_host = {"pid": pids[host.device], "tid": _tid(host, 0)}
    host_events = HostEvents(profile)
    # microseconds as JSON numbers: ns / 1000 reads back to the same ns (floats hold them exactly to 2**53 ns)
    nodes, starts, durs = laid.host_node.tolist(), (laid.host_start / 1e3).tolist(), (laid.host_dur / 1e3).tolist()
    parts: dict[int, tuple[str, str]] = {}  # per node: its events' JSON before the times and after them
    for i in np.lexsort((laid.host_depth, -laid.host_dur, laid.host_start)).tolist():
        node = nodes[i]
        part = parts.get(node)
        if part is None:
            cat, name, more = host_events(node)
            head = _json({"ph": "X", "cat": cat, "name": name, **on_host})[:-1]
            part = parts[node] = (head, ',"args":' + _json({"stack": stacks(node), **more}) + "}")
        yield f'{part[0]},"ts":{starts[i]!r},"dur":{durs[i]!r}{part[1]}'
    d_nodes, d_starts, d_durs = laid.device_node.tolist(), laid.device_start.tolist(), laid.device_dur.tolist()
    launches = laid.device_launch.tolist()
    for correlation, i in enumerate(np.lexsort((laid.device_node, laid.device_launch)).tolist(), start=1):
        node = d_nodes[i]
        stream = streams[node]
        on_stream = {"pid": pids[stream.device], "tid": _tid(stream, ordered.index(stream))}
        ts = _us(launches[i])
        yield {"ph": "X", "cat": "cuda_runtime", "name": "runtime", **on_host, "ts": ts, "dur": 0} | {
            "args": {"correlation": correlation}
        }
        yield {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": correlation, **on_host, "ts": ts}
        args = {"stack": stacks(node), "correlation": correlation}
        ts = _us(d_starts[i])
        yield {"ph": "X", "cat": "kernel", "name": profile.frame_of(node).name, **on_stream, "ts": ts} | {
            "dur": _us(d_durs[i]),
            "args": args,
        }
        yield {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": correlation, **on_stream, "ts": ts, "bp": "e"}


def dump(profile: Profile, fh: TextIO) -> None:
    tl = profile.timeline
    # a timeline with host rows (an import) is written as it is; a live run's holds its device rows at most
    # (its host work is aggregated): it is laid out as calls
    on_host = tl is not None and not bool(np.isin(tl.category, [int(c) for c in _DEVICE_SIDE]).all())
    events = timeline_events(profile, tl) if tl is not None and on_host else layout_events(profile)
    # (python_lines: its Python frames' lines are what they were in the profile: def lines of an import, else the
    # lines that ran; the importer reads it back)
    lines = "def" if profile.metadata.get("python_lines") == "def" else "ran"
    fh.write(
        f'{{"displayTimeUnit":"ns","otherData":{{"exporter":"kernelscope","python_lines":"{lines}"}},"traceEvents":[\n'
    )
    batch: list[str] = []
    sep = ""
    for event in events:
        batch.append(event if isinstance(event, str) else _json(event))
        if len(batch) == 4096:
            fh.write(sep + ",\n".join(batch))
            batch, sep = [], ",\n"
    if batch:
        fh.write(sep + ",\n".join(batch))
    fh.write("\n]}\n")


EXPORTER = register(
    Exporter(
        name="chrome",
        description="Chrome/Perfetto trace JSON (complete events per thread and stream, launch flows)",
        suffix=".trace.json",
        dump=dump,
    )
)
