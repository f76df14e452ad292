"""Perfetto protobuf traces (``.pftrace``) into finished slices: packets, interning, tracks, begin/end pairs.

Decoded with the TracePacket schema the ``perfetto`` package ships (``perfetto_trace_pb2``, offline; its
trace processor, which downloads a binary, is not used). The outer ``Trace`` message is framed here
(field 1, length-delimited) so that a file cut short is told apart from a corrupt one, and each packet is
parsed by protobuf. Interned names (``name_iid``, ``category_iids``, debug annotation names and string
values) are kept per packet sequence and cleared where the sequence says so.
"""

from __future__ import annotations

import zlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ...errors import BadInputError
from ...trust.limits import gunzip_capped, read_file_capped

_CLEARED = 1  # TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
_BEGIN, _END, _INSTANT = 1, 2, 3


@dataclass(frozen=True)
class Track:
    uuid: int
    parent: int
    name: str
    pid: int | None
    tid: int | None
    process: bool  # a process track (no thread)


@dataclass(frozen=True)
class Slice:
    track: int
    start: int  # ns
    dur: int
    name: str
    categories: tuple[str, ...]
    args: dict[str, Any]


@dataclass
class Decoded:
    slices: list[Slice] = field(default_factory=list)
    instants: list[Slice] = field(default_factory=list)
    tracks: dict[int, Track] = field(default_factory=dict)
    packets: int = 0
    bytes: int = 0


@dataclass
class _Interned:
    names: dict[int, str] = field(default_factory=dict)
    cats: dict[int, str] = field(default_factory=dict)
    ann_names: dict[int, str] = field(default_factory=dict)
    ann_strings: dict[int, str] = field(default_factory=dict)
    default_track: int = 0


def _schema() -> Any:
    try:
        from perfetto.protos.perfetto.trace import perfetto_trace_pb2
    except ImportError:
        raise BadInputError(
            "reading Perfetto .pftrace traces needs the perfetto package: pip install 'kernelscope[perfetto]'"
        ) from None
    return perfetto_trace_pb2


def read_bytes(path: str) -> bytes:
    try:
        data = read_file_capped(path)
    except OSError as exc:
        raise BadInputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if data[:2] == b"\x1f\x8b":
        try:
            data = gunzip_capped(data, path)
        except EOFError:
            raise BadInputError(f"{path}: truncated gzip file; re-copy or re-export the trace") from None
        except (OSError, zlib.error) as exc:
            raise BadInputError(f"{path}: corrupt gzip data ({exc}); re-copy or re-export the trace") from None
    return data


def _varint(buf: bytes, i: int, path: str) -> tuple[int, int]:
    shift = value = 0
    n = len(buf)
    while True:
        if i >= n:
            raise BadInputError(f"{path}: truncated Perfetto trace (ends inside a packet header); re-copy the trace")
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i
        shift += 7
        if shift > 63:
            raise BadInputError(f"{path}: corrupt Perfetto trace (bad varint at byte {i}); not a .pftrace")


def packets(path: str, buf: bytes) -> Any:
    """The raw TracePacket bytes of ``Trace.packet`` (field 1); other top-level fields are skipped."""
    i, n = 0, len(buf)
    while i < n:
        key, i = _varint(buf, i, path)
        wire, num = key & 7, key >> 3
        if wire == 2:
            size, i = _varint(buf, i, path)
            if i + size > n:
                raise BadInputError(
                    f"{path}: truncated Perfetto trace (a packet at byte {i} needs {size} bytes, "
                    f"{n - i} left); re-copy the trace"
                )
            if num == 1:
                yield buf[i : i + size]
            i += size
        elif wire == 0:
            _v, i = _varint(buf, i, path)
        else:
            raise BadInputError(f"{path}: corrupt Perfetto trace (wire type {wire} at the top level); not a .pftrace")


def decode(path: str, warnings: Counter[str]) -> Decoded:
    pb = _schema()
    from google.protobuf.message import DecodeError

    buf = read_bytes(path)
    out = Decoded(bytes=len(buf))
    seqs: dict[int, _Interned] = {}
    open_: dict[int, list[tuple[int, int, str, tuple[str, ...], dict[str, Any]]]] = {}
    done: list[tuple[int, Slice]] = []  # (begin order, slice): a parent before the children it encloses
    packet = pb.TracePacket()
    for raw in packets(path, buf):
        try:
            packet.ParseFromString(raw)
        except DecodeError:
            raise BadInputError(
                f"{path}: corrupt Perfetto trace (packet {out.packets + 1} does not decode); not a .pftrace"
            ) from None
        out.packets += 1
        seq_id = packet.trusted_packet_sequence_id
        seq = seqs.get(seq_id)
        if seq is None or packet.sequence_flags & _CLEARED:
            seq = seqs[seq_id] = _Interned()
        if packet.HasField("interned_data"):
            _intern(seq, packet.interned_data)
        if packet.HasField("trace_packet_defaults"):
            seq.default_track = packet.trace_packet_defaults.track_event_defaults.track_uuid
        if packet.HasField("track_descriptor"):
            td = packet.track_descriptor
            track = _track(td)
            if track.uuid not in out.tracks or td.name:
                out.tracks[track.uuid] = track
        if not packet.HasField("track_event"):
            continue
        te = packet.track_event
        uuid = te.track_uuid if te.HasField("track_uuid") else seq.default_track
        ts = packet.timestamp
        if te.type == _END:
            stack = open_.get(uuid)
            if not stack:
                warnings["slice ends without a begin skipped"] += 1
                continue
            order, start, name, cats, args = stack.pop()
            if ts < start:
                warnings["negative durations clamped to 0"] += 1
            done.append((order, Slice(uuid, start, max(ts - start, 0), name, cats, args)))
        elif te.type == _BEGIN or te.type == _INSTANT:
            name = te.name if te.HasField("name") else seq.names.get(te.name_iid, "")
            cats = tuple(te.categories) + tuple(seq.cats.get(c, "") for c in te.category_iids)
            args = _annotations(te.debug_annotations, seq)
            if te.type == _BEGIN:
                open_.setdefault(uuid, []).append((out.packets, ts, name, cats, args))
            else:
                out.instants.append(Slice(uuid, ts, 0, name, cats, args))
    done.sort(key=lambda d: d[0])
    out.slices = [s for _o, s in done]
    unclosed = sum(len(s) for s in open_.values())
    if unclosed:
        warnings["slices without an end (trace stopped inside them) skipped"] += unclosed
    return out


def _intern(seq: _Interned, data: Any) -> None:
    for entry in data.event_names:
        seq.names[entry.iid] = entry.name
    for entry in data.event_categories:
        seq.cats[entry.iid] = entry.name
    for entry in data.debug_annotation_names:
        seq.ann_names[entry.iid] = entry.name
    for entry in data.debug_annotation_string_values:
        seq.ann_strings[entry.iid] = entry.str.decode("utf-8", errors="replace")


def _track(td: Any) -> Track:
    pid = tid = None
    if td.HasField("thread"):
        pid, tid = td.thread.pid, td.thread.tid
    elif td.HasField("process"):
        pid = td.process.pid
    name = td.name or (td.thread.thread_name if td.HasField("thread") else "")
    return Track(td.uuid, td.parent_uuid, name, pid, tid, td.HasField("process") and not td.HasField("thread"))


def _annotations(items: Any, seq: _Interned) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for da in items:
        key = da.name if da.WhichOneof("name_field") == "name" else seq.ann_names.get(da.name_iid, "")
        which = da.WhichOneof("value")
        if which is None or not key:
            continue
        if which == "string_value_iid":
            out[key] = seq.ann_strings.get(da.string_value_iid, "")
        elif which == "nested_value":
            continue
        else:
            out[key] = getattr(da, which)
    return out


__all__ = ["Decoded", "Slice", "Track", "decode", "read_bytes"]
