"""pprof: a gzipped ``perftools.profiles.Profile`` (github.com/google/pprof, proto/profile.proto).

One sample type per metric (``time``/nanoseconds for ``time_ns``, ``cpu_time``/nanoseconds,
``count``/count, ``flops``/count, ``bytes``/bytes, other metrics ``NAME``/count); the default
is ``time``. One sample per node with a non-zero exclusive value, its location ids the node's
frames from the leaf up (the root left out), its values the node's exclusive metrics rounded to
integers. One location and one function per distinct frame: the function's name is
``Frame.label()`` (so kernels on two streams stay two functions), its file and start line a
python frame's; a kernel's sample carries ``device`` and ``stream`` labels. ``go tool pprof``
reads it (``-raw``, ``-top``, ``-sample_index=flops``, ...).

The message is small and fixed, so it is encoded here (varints and length-delimited fields, as
the protobuf wire format defines them) rather than through generated protobuf code.
"""

from __future__ import annotations

import gzip

from ...model import FrameKind, Profile
from .registry import Exporter, register

SAMPLE_TYPES = {
    "time_ns": ("time", "nanoseconds"),
    "cpu_time_ns": ("cpu_time", "nanoseconds"),
    "count": ("count", "count"),
    "flops": ("flops", "count"),
    "bytes": ("bytes", "bytes"),
    "alloc_bytes": ("alloc_bytes", "bytes"),
}


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # int64 as two's complement, as protobuf encodes negative int64
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _int(field: int, value: int) -> bytes:
    return _varint(field << 3) + _varint(value) if value else b""


def _bytes(field: int, payload: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(payload)) + payload


def _packed(field: int, values: list[int]) -> bytes:
    return _bytes(field, b"".join(_varint(v) for v in values)) if values else b""


class _Strings:
    def __init__(self) -> None:
        self.index: dict[str, int] = {"": 0}

    def __call__(self, s: str) -> int:
        i = self.index.get(s)
        if i is None:
            i = self.index[s] = len(self.index)
        return i


def encode_message(profile: Profile) -> bytes:
    """The uncompressed ``Profile`` message."""
    strings = _Strings()
    metrics = profile.metric_names
    out = bytearray()
    types = [SAMPLE_TYPES.get(m, (m, "count")) for m in metrics]
    for name, unit in types:
        out += _bytes(1, _int(1, strings(name)) + _int(2, strings(unit)))
    columns = [[round(v) for v in profile.exclusive(m).tolist()] for m in metrics]
    frame, parent = profile.frame.tolist(), profile.parent.tolist()
    used: set[int] = set()
    for node in range(1, len(profile)):
        values = [col[node] for col in columns]
        if not any(values):
            continue
        stack: list[int] = []
        n = node
        while n > 0:
            stack.append(frame[n] + 1)  # location id = frame index + 1, leaf first
            n = parent[n]
        used.update(stack)
        sample = _packed(1, stack) + _packed(2, values)
        f = profile.frame_of(node)
        if f.kind is FrameKind.KERNEL:
            if f.device:
                sample += _bytes(3, _int(1, strings("device")) + _int(2, strings(f.device)))
            if f.stream >= 0:
                sample += _bytes(3, _int(1, strings("stream")) + _int(3, f.stream))
        out += _bytes(2, sample)
    for loc in sorted(used):
        f = profile.frames[loc - 1]
        line = _int(1, loc) + _int(2, f.line if f.kind is FrameKind.PYTHON else 0)
        out += _bytes(4, _int(1, loc) + _bytes(4, line))
    for fid in sorted(used):
        f = profile.frames[fid - 1]
        label = strings(f.label())
        body = _int(1, fid) + _int(2, label) + _int(3, label)
        if f.file:
            body += _int(4, strings(f.file)) + _int(5, f.line)
        out += _bytes(5, body)
    table = list(strings.index)
    for s in table:
        out += _bytes(6, s.encode("utf-8"))
    if "time_ns" in metrics:
        out += _int(14, strings.index["time"])
    return bytes(out)


def encode(profile: Profile) -> bytes:
    return gzip.compress(encode_message(profile), compresslevel=6, mtime=0)


EXPORTER = register(
    Exporter(
        name="pprof",
        description="pprof profile.proto (gzipped), one sample type per metric, for go tool pprof",
        suffix=".pb.gz",
        encode=encode,
    )
)
