"""Perfetto protobuf traces (``.pftrace``): Kineto's native Perfetto output and rocprofv3's ``pftrace`` output.

``wire`` turns packets into finished slices; here each slice becomes the Chrome-trace event the Kineto
importer reads (category, name, thread, ts/dur in µs, args), so the one decoder and the one engine do
the rest, exactly as for a Kineto JSON trace.

- Kineto (``PerfettoTraceBuilder``): no categories; each activity's Chrome ``args`` are a JSON fragment
  in the ``metadata`` debug annotation and its correlation in ``correlation_id``; threads and GPU
  streams are thread tracks (``pid`` = device or process, ``tid`` = stream or thread) with one child
  track per activity. The category is inferred from the args (``stream``/``device`` → GPU activity,
  ``cbid`` → runtime call, ``Python id`` or a ``file.py(N): f`` name → Python frame, else an op).
- rocprofv3: categories ``hip_api``, ``kernel_dispatch``, ``memory_copy``, ``marker_api``
  (others, such as ``hsa_api``, are not read); the correlation is the ``corr_id`` annotation, a kernel's
  device and queue its ``agent`` and ``queue`` annotations.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from ...errors import BadInputError
from ...model import Profile
from ..kineto import build_from_events
from ..kineto.events import RawEvent, event_from_dict
from ..kineto.pyframes import python_frame
from ..registry import Importer, register
from .wire import Decoded, Slice, Track, decode

__all__ = ["load_pftrace", "sniff_pftrace"]

_EXTENSIONS = (".pftrace", ".perfetto-trace", ".pftrace.gz", ".perfetto-trace.gz")
# rocprofv3's categories -> the Kineto category of the same kind ("" = not read)
_ROCPROF: dict[str, str] = {
    "hip_api": "hip_runtime",
    "kernel_dispatch": "kernel",
    "memory_copy": "gpu_memcpy",
    "marker_api": "user_annotation",
    "hsa_api": "",
    "rccl_api": "",
    "scratch_memory": "",
    "memory_allocation": "",
    "counter_collection": "",
}
_KINETO_CATS = {"cpu_op", "user_annotation", "python_function", "cuda_runtime", "cuda_driver", "kernel"}
_API_NAME = re.compile(r"^(cuda|cu|hip|hsa)[A-Z]")


def sniff_pftrace(path: str, head: bytes) -> bool:
    return path.lower().endswith(_EXTENSIONS)


def load_pftrace(path: str) -> Profile:
    warnings: Counter[str] = Counter()
    decoded = decode(path, warnings)
    if not decoded.slices:
        raise BadInputError(
            f"{path}: no slices among {decoded.packets:,} Perfetto packets (nothing was recorded); "
            "not a Kineto or rocprofv3 trace"
        )
    producer = "rocprofv3" if any(c in _ROCPROF for s in decoded.slices[:1000] for c in s.categories) else "kineto"
    events = _events(decoded, warnings)
    header = _header(decoded.instants) if producer == "kineto" else {}
    return build_from_events(path, events, header, decoded.bytes, f"pftrace-{producer}", warnings)


def _thread(track: Track | None, tracks: dict[int, Track]) -> tuple[int, int]:
    """(pid, tid) of a slice's track: its own thread, else its parent's (Kineto's per-activity child tracks)."""
    seen = 0
    t = track
    while t is not None and seen < 8:
        if t.tid is not None:
            return t.pid or 0, t.tid
        t = tracks.get(t.parent) if t.parent else None
        seen += 1
    if track is None:
        return 0, 0
    return (track.pid or 0), track.uuid & 0x7FFFFFFF


def _events(decoded: Decoded, warnings: Counter[str]) -> list[RawEvent]:
    tracks = decoded.tracks
    kinds = [_category(s, warnings) for s in decoded.slices]
    # a thread track that holds GPU activities is a stream: Kineto's GPU user annotations on it are skipped
    streams = {
        _thread(tracks.get(s.track), tracks) for s, k in zip(decoded.slices, kinds, strict=True) if k == "kernel"
    }
    out: list[RawEvent] = []
    for s, cat in zip(decoded.slices, kinds, strict=True):
        if not cat:
            continue
        pid, tid = _thread(tracks.get(s.track), tracks)
        args = _args(s)
        if cat == "cpu_op" and (pid, tid) in streams:
            warnings["GPU user annotations skipped"] += 1
            continue
        if cat == "kernel":
            name = s.name
            cat = "gpu_memcpy" if name.startswith("Memcpy") else "gpu_memset" if name.startswith("Memset") else cat
        item = {"ph": "X", "cat": cat, "name": s.name, "pid": pid, "tid": tid}
        item["ts"], item["dur"], item["args"] = s.start / 1000.0, s.dur / 1000.0, args
        ev = event_from_dict(item, warnings)
        if ev is not None:
            out.append(ev)
    return out


def _args(s: Slice) -> dict[str, Any]:
    args: dict[str, Any] = {}
    meta = s.args.get("metadata")
    if isinstance(meta, str) and meta.strip():
        text = meta.strip()
        try:
            parsed = json.loads(text if text.startswith("{") else "{" + text + "}")
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            args.update(parsed)
    corr = s.args.get("corr_id", s.args.get("correlation_id"))
    if "correlation" not in args and isinstance(corr, int):
        args["correlation"] = corr
    for key, to in (("agent", "device"), ("queue", "stream")):
        if to not in args and isinstance(s.args.get(key), int):
            args[to] = s.args[key]
    return args


def _category(s: Slice, warnings: Counter[str]) -> str:
    """The Kineto category of a slice ("" = not read)."""
    for cat in s.categories:
        if cat in _ROCPROF:
            if not _ROCPROF[cat]:
                warnings[f"rocprofv3 {cat} slices not read"] += 1
            return _ROCPROF[cat]
        if cat.lower() in _KINETO_CATS:
            return cat.lower()
    meta = s.args.get("metadata")
    text = meta if isinstance(meta, str) else ""
    if '"cuda_sync_kind"' in text:
        return "cuda_sync"  # (a synchronisation, not read from JSON either)
    if '"stream"' in text or '"device"' in text:
        return "kernel"
    if '"cbid"' in text or (_API_NAME.match(s.name) and ("correlation_id" in s.args or '"correlation"' in text)):
        return "cuda_runtime"
    if '"Python id"' in text or python_frame(s.name) is not None:
        return "python_function"
    if s.name.startswith("ProfilerStep#"):
        return "user_annotation"
    return "cpu_op"


def _header(instants: list[Slice]) -> dict[str, Any]:
    """Kineto's ``trace_metadata`` and ``device_properties`` instants, as the JSON trace's top-level keys."""
    header: dict[str, Any] = {}
    for s in instants:
        if s.name == "trace_metadata":
            for key, value in s.args.items():
                header[key] = _json(value)
        elif s.name == "device_properties" and isinstance(s.args.get("properties"), str):
            props = _json("[" + s.args["properties"] + "]")
            if isinstance(props, list) and len(props) == 1 and isinstance(props[0], list):
                props = props[0]
            header["deviceProperties"] = props
    return header


def _json(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


register(
    Importer(
        name="pftrace",
        description="Perfetto protobuf trace from Kineto or rocprofv3 (.pftrace)",
        sniff=sniff_pftrace,
        load=load_pftrace,
        priority=1,
    )
)
