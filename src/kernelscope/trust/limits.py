"""Bounded reading: what kernelscope will read of a file someone else wrote.

Every archive member, decompressed stream and single string has a cap, and going past it is one line
naming the cap (``BadInputError``, exit 2), never gigabytes of memory: a 7 MB profile whose
``metadata.json`` inflates to 1.6 GB, or one 400 MB name in a small gzip trace, stop at the cap.
A FIFO, device or socket given as input is refused at once (reading one would block or never end).

The caps are far above anything a real profile or trace holds (profiles are kilobytes to a few MB; a
real trace event is a few KB) and far below what would exhaust a laptop.
"""

from __future__ import annotations

import os
import stat
import zlib
from typing import IO

from ..errors import BadInputError

MiB = 1 << 20
GiB = 1 << 30

# .ksprof members (after inflating): JSON documents and .npy columns.
MAX_METADATA_BYTES = 64 * MiB  # header.json, metadata.json, timeline/tracks.json
MAX_JSON_MEMBER_BYTES = 512 * MiB  # frames.json
MAX_ARRAY_MEMBER_BYTES = 2 * GiB  # one .npy column (a 250M-row timeline)
# Whole-file formats (Proton, xplane, pftrace, ONNX Runtime, rocprof JSON), after gunzip.
MAX_WHOLE_FILE_BYTES = 2 * GiB  # (protobuf refuses messages over 2 GiB anyway)
# A streamed trace: its whole decompressed length, and one event (hence one string) in it.
MAX_STREAM_BYTES = 256 * GiB
MAX_EVENT_BYTES = 32 * MiB


def size_text(n: int) -> str:
    return f"{n / GiB:g} GiB" if n >= GiB else f"{n / MiB:g} MiB"


def refuse_special(path: str) -> None:
    """``BadInputError`` at once for a FIFO, device or socket (a folder is the caller's to judge)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # the caller says "no such file" or "cannot read" in its own words
    kind = (
        "a FIFO (named pipe)"
        if stat.S_ISFIFO(mode)
        else "a device"
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "a socket"
        if stat.S_ISSOCK(mode)
        else None
    )
    if kind is not None:
        raise BadInputError(f"{path}: is {kind}, not a file; kernelscope reads regular files only")


def read_capped(fh: IO[bytes], cap: int, what: str) -> bytes:
    """All of ``fh`` (any readable binary stream: a zip member, a gzip stream, a file), or
    ``BadInputError`` naming ``what`` and the cap when there is more than ``cap`` bytes."""
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = fh.read(min(16 * MiB, cap + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if size > cap:
            raise BadInputError(
                f"{what}: larger than kernelscope reads ({size_text(cap)}); the file is damaged or hostile"
            )
    return b"".join(chunks)


def read_file_capped(path: str, cap: int = MAX_WHOLE_FILE_BYTES) -> bytes:
    """A whole regular file, refused at once when it is not one or when it is over ``cap``."""
    refuse_special(path)
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > cap:
            raise BadInputError(f"{path}: {size_text(size)}, larger than kernelscope reads whole ({size_text(cap)})")
        return read_capped(fh, cap, path)


def gunzip_capped(data: bytes, path: str, cap: int = MAX_WHOLE_FILE_BYTES) -> bytes:
    """``gzip.decompress`` that stops at ``cap`` bytes of output (a gzip bomb is one line, not all memory).

    Concatenated members are read like ``gzip.decompress`` does. Raises ``zlib.error`` for corrupt data
    and ``EOFError`` for a truncated stream, as ``gzip`` does, for the caller's own messages.
    """
    out: list[bytes] = []
    size = 0
    rest = data
    while rest:
        inflate = zlib.decompressobj(wbits=31)
        chunk = inflate.decompress(rest, cap + 1 - size)
        while True:
            out.append(chunk)
            size += len(chunk)
            if size > cap:
                raise BadInputError(
                    f"{path}: decompresses to more than kernelscope reads ({size_text(cap)}); the file is damaged or hostile"
                )
            if not inflate.unconsumed_tail:
                break
            chunk = inflate.decompress(inflate.unconsumed_tail, cap + 1 - size)
        if not inflate.eof:
            raise EOFError("Compressed file ended before the end-of-stream marker was reached")
        rest = inflate.unused_data.lstrip(b"\x00")
    return b"".join(out)
