"""Streaming reader for Chrome/Kineto trace JSON: the ``traceEvents`` array in decoded batches.

The file is never loaded whole. It is read (and gunzipped) in chunks; each chunk is cut at
an event boundary and the batch ``[ev, ev, ...]`` is decoded by msgspec in one call. A cut is
only a *candidate* (a ``}`` followed by ``,`` and ``{``): it is confirmed by the decoder, since
a cut inside a string or a nested object can never decode as a list of complete values.
Everything outside the array (``deviceProperties``, ``distributedInfo``, ...) is collected and
decoded at the end as the trace's header.

Memory: one chunk plus one decoded batch at a time.
"""

from __future__ import annotations

import gzip
import json
import re
import zlib
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import IO, Any

import msgspec

from ...errors import BadInputError
from ...trust.limits import MAX_EVENT_BYTES, MAX_STREAM_BYTES, refuse_special, size_text
from .events import FastEvent, RawEvent, event_from_dict

CHUNK = 4 << 20  # bytes of decompressed JSON per read
MAX_PENDING = MAX_EVENT_BYTES  # a single event (or string) larger than this: damaged or hostile
MAX_HEADER = 64 << 20  # bytes before "traceEvents" we are willing to hold
_TRIES = 8  # candidate cuts tried per batch before reading more

_ARRAY_START = re.compile(rb'"traceEvents"\s*:\s*\[')
_WS = b" \t\r\n"

_DECODER = msgspec.json.Decoder(list[FastEvent])


class _Stream:
    """Chunked reads of the (decompressed) file that turn every I/O failure into BadInputError."""

    def __init__(self, path: str) -> None:
        self.path = path
        refuse_special(path)
        try:
            raw = open(path, "rb")  # noqa: SIM115 (closed in close())
        except OSError as exc:
            raise BadInputError(f"{path}: cannot open ({exc.strerror or exc})") from None
        magic = raw.read(2)
        raw.seek(0)
        self.gzip = magic == b"\x1f\x8b"
        self._fh: IO[bytes] = gzip.GzipFile(fileobj=raw, mode="rb") if self.gzip else raw  # type: ignore[assignment]
        self._raw = raw
        self.eof = False
        self.consumed = 0  # decompressed bytes handed out so far

    def read(self, size: int = CHUNK) -> bytes:
        if self.eof:
            return b""
        try:
            data = self._fh.read(size)
        except EOFError:
            raise BadInputError(
                f"{self.path}: truncated gzip file (ends before the end-of-stream marker); re-copy or re-export the trace"
            ) from None
        except (OSError, zlib.error) as exc:
            what = "corrupt gzip data" if self.gzip else "read error"
            raise BadInputError(f"{self.path}: {what} ({exc}); re-copy or re-export the trace") from None
        if not data:
            self.eof = True
        self.consumed += len(data)
        if self.consumed > MAX_STREAM_BYTES:
            raise BadInputError(
                f"{self.path}: decompresses to more than kernelscope reads ({size_text(MAX_STREAM_BYTES)}); "
                "the file is damaged or hostile"
            )
        return data

    def close(self) -> None:
        self._fh.close()
        self._raw.close()


class TraceReader:
    """Iterate ``batches()``; afterwards ``header`` holds the top-level keys other than traceEvents."""

    def __init__(self, path: str, warnings: Counter[str]) -> None:
        self.path = path
        self.warnings = warnings
        self.header: dict[str, Any] = {}
        self.bytes_read = 0

    # --- public -------------------------------------------------------------
    def batches(self) -> Iterator[Sequence[RawEvent]]:
        stream = _Stream(self.path)
        try:
            yield from self._batches(stream)
        finally:
            self.bytes_read = stream.consumed
            stream.close()

    # --- the array ----------------------------------------------------------
    def _batches(self, stream: _Stream) -> Iterator[Sequence[RawEvent]]:
        prefix, buf = self._find_array(stream)
        while True:
            buf = buf.lstrip(_WS)
            if buf[:1] == b"]":  # end of the array (also: an empty array)
                self._finish_header(stream, prefix, buf[1:])
                return
            events, rest = self._cut(buf)
            if events is not None:
                if events:
                    yield events
                buf = rest
                continue
            if stream.eof:
                events, trailer = self._cut_last(buf)
                if events:
                    yield events
                self._finish_header(stream, prefix, trailer)
                return
            if len(buf) > MAX_PENDING:
                raise BadInputError(
                    f"{self.path}: no event boundary in {len(buf) >> 20} MiB after byte {stream.consumed - len(buf)} "
                    f"(an event or string over {size_text(MAX_PENDING)}, more than kernelscope reads); "
                    "the file is damaged or hostile"
                )
            buf += stream.read(max(CHUNK, len(buf)))

    def _find_array(self, stream: _Stream) -> tuple[bytes, bytes]:
        """Read up to the ``[`` that opens traceEvents; return (text before the key, text after the bracket)."""
        head = b""
        while True:
            chunk = stream.read()
            head += chunk
            first = head.lstrip(_WS)[:1]
            if first == b"[":  # the JSON-array flavour of the Chrome trace format
                start = head.index(b"[")
                return b"", head[start + 1 :]
            if first and first != b"{":
                raise BadInputError(f"{self.path}: not JSON (starts with {first!r}); expected a Kineto/Chrome trace")
            m = _ARRAY_START.search(head)
            if m is not None:
                return head[: m.start()], head[m.end() :]
            if stream.eof or len(head) > MAX_HEADER:
                raise BadInputError(self._why_no_array(head, stream.eof))

    def _why_no_array(self, head: bytes, complete: bool) -> str:
        if not head.strip():
            return f"{self.path}: empty file"
        if complete:
            try:
                doc = json.loads(head)
            except (ValueError, RecursionError):
                return f"{self.path}: truncated or malformed JSON; re-export the trace"
            if isinstance(doc, dict) and "traceEvents" in doc:
                kind = type(doc["traceEvents"]).__name__
                return f"{self.path}: traceEvents is a {kind}, not an array of events; not a Kineto/Chrome trace"
            if isinstance(doc, dict):
                keys = ", ".join(sorted(str(k) for k in doc)[:6])
                return f"{self.path}: JSON without a traceEvents array (keys: {keys}); not a Kineto/Chrome trace"
            return f"{self.path}: JSON {type(doc).__name__}, not a Kineto/Chrome trace"
        return f"{self.path}: no traceEvents array in the first {MAX_HEADER >> 20} MiB; not a Kineto/Chrome trace"

    def _cut(self, buf: bytes) -> tuple[Sequence[RawEvent] | None, bytes]:
        """Decode the longest prefix of whole events; (None, buf) when no candidate cut works."""
        end = len(buf)
        for _ in range(_TRIES):
            close = buf.rfind(b"}", 0, end)
            if close < 0:
                return None, buf
            nxt = _skip_ws(buf, close + 1)
            if nxt < len(buf) and buf[nxt] == 44:  # ","
                after = _skip_ws(buf, nxt + 1)
                if after < len(buf) and buf[after] == 123:  # "{"
                    events = self._decode(buf, close + 1)
                    if events is not None:
                        return events, buf[after:]
            end = close
        return None, buf

    def _cut_last(self, buf: bytes) -> tuple[Sequence[RawEvent], bytes]:
        """At end of input: the events up to the ``]`` that closes the array, and what follows it."""
        for close in self._array_ends(buf):
            events = self._decode(buf, close)
            if events is not None:
                return events, buf[_skip_ws(buf, close) + 1 :]
        raise BadInputError(f"{self.path}: truncated or malformed JSON in traceEvents; re-export the trace")

    @staticmethod
    def _array_ends(buf: bytes) -> Iterator[int]:
        """Candidate ends of the last events: after a ``}`` followed by ``]``, then after any value before ``]``."""
        start = 0
        while (close := buf.find(b"}", start)) >= 0:
            nxt = _skip_ws(buf, close + 1)
            if nxt < len(buf) and buf[nxt] == 93:  # "]"
                yield close + 1
            start = close + 1
        start = 0
        for _ in range(64):  # arrays of non-objects: tolerated (and counted) by the slow path
            bracket = buf.find(b"]", start)
            if bracket < 0:
                return
            yield len(buf[:bracket].rstrip(_WS))
            start = bracket + 1

    def _decode(self, buf: bytes, end: int) -> Sequence[RawEvent] | None:
        """Decode ``buf[:end]`` as a list of events; None when the cut is not an event boundary."""
        batch = b"".join((b"[", memoryview(buf)[:end], b"]"))  # one copy
        try:
            return _DECODER.decode(batch)
        except msgspec.ValidationError:
            return self._decode_slow(batch)
        except msgspec.DecodeError as exc:
            self._check_cut_error(exc, len(batch))
            return None
        except UnicodeDecodeError:
            return self._decode_slow(batch)

    def _check_cut_error(self, exc: msgspec.DecodeError, size: int) -> None:
        """A wrong cut fails at the very end; an error earlier in the batch is a corrupt file."""
        msg = str(exc)
        m = re.search(r"\(byte (\d+)\)", msg)
        if m is None or int(m.group(1)) >= size - 2:
            return
        if "trailing characters" in msg:
            return  # the array ended inside this batch: _cut_last finds the exact end
        raise BadInputError(f"{self.path}: malformed JSON in traceEvents ({msg}); the file is corrupt")

    def _decode_slow(self, batch: bytes) -> Sequence[RawEvent] | None:
        """Tolerant path: invalid UTF-8, wrong field types, out-of-range numbers. Counted, never fatal."""
        try:
            text = batch.decode("utf-8")
        except UnicodeDecodeError:
            text = batch.decode("utf-8", errors="replace")
            self.warnings["invalid UTF-8 replaced"] += 1
        try:
            return _DECODER.decode(text.encode("utf-8"))
        except msgspec.ValidationError:
            pass
        except msgspec.DecodeError as exc:
            self._check_cut_error(exc, len(batch))
            return None
        try:
            items = json.loads(text)
        except (ValueError, RecursionError):
            return None
        out: list[RawEvent] = []
        for item in items:
            ev = event_from_dict(item, self.warnings)
            if ev is not None:
                out.append(ev)
        return out

    # --- the rest of the document ------------------------------------------
    def _finish_header(self, stream: _Stream, prefix: bytes, trailer: bytes) -> None:
        tail = [trailer]
        size = len(trailer)
        while not stream.eof and size <= MAX_HEADER:
            chunk = stream.read()
            tail.append(chunk)
            size += len(chunk)
        rest = b"".join(tail)
        if not prefix:  # top-level array: nothing but whitespace may follow
            if rest.strip():
                self.warnings["text after the event array ignored"] += 1
            return
        doc = prefix + b'"traceEvents": []' + rest
        try:
            header = json.loads(doc.decode("utf-8", errors="replace"))
        except (ValueError, RecursionError):
            if not rest.strip():
                raise BadInputError(
                    f"{self.path}: truncated JSON (ends after the event array); re-export the trace"
                ) from None
            self.warnings["unreadable trace header"] += 1
            return
        if isinstance(header, dict):
            header.pop("traceEvents", None)
            self.header = header


def _skip_ws(buf: bytes, i: int) -> int:
    n = len(buf)
    while i < n and buf[i] in _WS:
        i += 1
    return i
