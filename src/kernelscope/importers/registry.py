"""Importers: one per trace format. A new format is one new module that calls ``register``."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import BadInputError, UnknownFormatError
from ..model import Profile
from ..trust.limits import refuse_special


@dataclass(frozen=True)
class Importer:
    name: str  # "kineto", "proton"
    description: str
    # sniff(path, head) -> True when this importer reads the file; ``head`` is the first
    # bytes of the file, decompressed when the file is gzip.
    sniff: Callable[[str, bytes], bool]
    load: Callable[[str], Profile]
    # asked before importers of lower priority: a format that is a special case of another's sniff
    # (ONNX Runtime's profile is a Chrome-trace array) outranks it
    priority: int = 0


_REGISTRY: list[Importer] = []


def register(importer: Importer) -> Importer:
    _REGISTRY.append(importer)
    return importer


def importers() -> list[Importer]:
    from . import _all  # noqa: F401  (registers the built-in importers)

    return sorted(_REGISTRY, key=lambda i: -i.priority)  # (stable: registration order within a priority)


def read_head(path: str, size: int = 65536) -> bytes:
    """First ``size`` bytes of the file, gunzipped when it is gzip.

    A gzip file is decompressed incrementally, so a truncated one still gives what it holds; one
    from which nothing at all can be decompressed raises BadInputError (truncated or corrupt gzip),
    rather than passing for an empty file.
    """
    import zlib

    try:
        with open(path, "rb") as fh:
            head = fh.read(size)
            if head[:2] != b"\x1f\x8b":
                return head
            inflate = zlib.decompressobj(wbits=31)  # gzip container
            out = b""
            try:
                while len(out) < size:
                    raw = head if head else fh.read(size)
                    head = b""
                    if not raw:
                        break
                    out += inflate.decompress(raw, size - len(out))
                    while inflate.unconsumed_tail and len(out) < size:
                        out += inflate.decompress(inflate.unconsumed_tail, size - len(out))
                    if inflate.eof:
                        break
            except zlib.error as exc:
                if not out:
                    raise BadInputError(f"{path}: corrupt gzip data ({exc}); re-copy or re-export the trace") from None
            if not out and not inflate.eof:
                raise BadInputError(
                    f"{path}: truncated gzip file (nothing could be decompressed); re-copy or re-export the trace"
                )
            return out[:size]
    except OSError as exc:
        raise BadInputError(f"{path}: cannot read ({exc.strerror or exc})") from None


def find_importer(path: str) -> Importer:
    if not os.path.exists(path):
        raise BadInputError(f"{path}: no such file")
    if os.path.isdir(path):
        raise BadInputError(f"{path}: is a directory; give a trace or profile file")
    refuse_special(path)
    head = read_head(path)
    if not head.strip():
        raise BadInputError(f"{path}: empty file")
    for imp in importers():
        if imp.sniff(path, head):
            return imp
    names = ", ".join(i.description for i in importers()) or "none registered"
    raise UnknownFormatError(f"{path}: not a format kernelscope reads (known: kernelscope .ksprof, {names})")


def import_file(path: str) -> Profile:
    return find_importer(path).load(path)
