"""PyTorch/Kineto chrome traces (``.json``, ``.json.gz``): streamed, joined, built into a Profile.

``reader`` streams the event array in decoded batches, ``tables`` keeps the compact columns the
joins need: ``decode`` writes them as the normalised records of ``attribute.tables``, and
``attribute.engine`` (the one path from records to a Profile) nests, joins and builds the tree.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ...attribute.engine import build_profile
from ...attribute.tables import EventTables
from ...errors import BadInputError
from ...model import Profile
from ...model.devices import from_kineto
from ...model.devices import to_json as devices_json
from ..registry import Importer, register
from .decode import ChromeDecoder
from .events import RawEvent
from .reader import TraceReader

__all__ = ["build_from_events", "load_kineto", "sniff_kineto"]

_TRACE_HINT = re.compile(rb'"traceEvents"|"ph"\s*:|"schemaVersion"|"deviceProperties"')


def sniff_kineto(path: str, head: bytes) -> bool:
    start = head.lstrip()[:1]
    if start not in (b"{", b"["):
        return False
    return _TRACE_HINT.search(head) is not None


def load_kineto(path: str) -> Profile:
    """Import one trace. Bad input raises BadInputError (one line); nothing is printed."""
    warnings: Counter[str] = Counter()
    reader = TraceReader(path, warnings)
    tables = EventTables(warnings)
    try:
        return _load(path, reader, tables, warnings)
    finally:
        tables.close()


class _Batches(Protocol):
    header: dict[str, Any]
    bytes_read: int

    def batches(self) -> Iterator[Sequence[RawEvent]]: ...


@dataclass
class _Given:
    events: Sequence[RawEvent]
    header: dict[str, Any] = field(default_factory=dict)
    bytes_read: int = 0

    def batches(self) -> Iterator[Sequence[RawEvent]]:
        for i in range(0, len(self.events), 65536):
            yield self.events[i : i + 65536]


def build_from_events(
    path: str, events: Sequence[RawEvent], header: dict[str, Any], nbytes: int, fmt: str, warnings: Counter[str]
) -> Profile:
    """A profile from Chrome-trace events decoded elsewhere (Kineto's Perfetto output), by the same path."""
    tables = EventTables(warnings)
    try:
        return _load(path, _Given(events, header, nbytes), tables, warnings, fmt)
    finally:
        tables.close()


def _load(path: str, reader: _Batches, tables: EventTables, warnings: Counter[str], fmt: str = "kineto") -> Profile:
    """Decode the reader's batches and build the profile (``reader``: anything with ``batches()``, ``header``
    and ``bytes_read``; the Perfetto importer hands it Kineto's slices as Chrome events)."""
    try:
        decoder = ChromeDecoder(tables)
        for batch in reader.batches():
            decoder.add(batch)
        graphs = decoder.finish()
        tables.host.finish()
        tables.device.finish()
    except RecursionError:
        raise BadInputError(f"{path}: JSON nested too deeply; not a Kineto/Chrome trace") from None
    except MemoryError:
        raise BadInputError(f"{path}: out of memory while reading the trace") from None
    except OSError as exc:  # the temporary runs (disk full, no TMPDIR)
        raise BadInputError(f"{path}: I/O error while importing ({exc.strerror or exc}); check TMPDIR space") from None
    if tables.events_seen == 0:
        raise BadInputError(f"{path}: the trace has no events (nothing was recorded)")
    if len(tables.host) + len(tables.device) == 0:
        seen = ", ".join(repr(c[:40]) for c, _n in tables.categories.most_common(4)) or "none"
        raise BadInputError(
            f"{path}: no ops, kernels or annotations among {tables.events_seen:,} events "
            f"(unknown categories: {seen}); not a PyTorch/Kineto trace"
        )
    for cat, n in tables.categories.items():
        warnings[f"events of unknown category {cat[:60]!r} skipped"] += n
    metadata = _metadata(path, reader.header, tables, warnings, reader.bytes_read, fmt)
    if graphs:
        metadata["cuda_graphs"] = graphs
    # its Python frames name functions, not the lines that ran (diff compares them by function); a trace kernelscope
    # exported says which it holds
    other = reader.header.get("otherData")
    said = other.get("python_lines") if isinstance(other, dict) and other.get("exporter") == "kernelscope" else None
    if (decoder.def_lines and said is None) or said == "def":
        metadata["python_lines"] = "def"
    return build_profile(tables, metadata, warnings)


def _metadata(
    path: str, header: dict[str, Any], tables: EventTables, warnings: Counter[str], nbytes: int, fmt: str
) -> dict[str, Any]:
    dist = header.get("distributedInfo")
    meta: dict[str, Any] = {
        "source": {"format": fmt, "path": os.path.abspath(path), "bytes": nbytes, "events": tables.events_seen},
    }
    devices = from_kineto(header.get("deviceProperties"))
    if devices:
        meta["devices"] = devices_json(devices)
    for key in (
        "schemaVersion",
        "distributedInfo",
        "displayTimeUnit",
        "baseTimeNanoseconds",
        "traceName",
        "cuda_runtime_version",
        "cuda_driver_version",
        "hip_runtime_version",
        "hip_driver_version",
        "cupti_version",
        "roctracer_version",
        "trace_id",
    ):
        if key in header:
            meta[key] = header[key]
    if isinstance(dist, dict):
        for key in ("rank", "world_size"):
            if type(dist.get(key)) is int:
                meta[key] = dist[key]
    firsts = [tables.device.min_start] if tables.device.min_start is not None else []
    if tables.host.min_start is not None:
        firsts.append(tables.host.min_start)
    if firsts:
        meta["trace_start_ns"] = int(min(firsts))
    if tables.triton_files:
        meta["triton_kernel_files"] = dict(tables.triton_files)
    if tables.collectives:
        # what each communication kernel recorded, by correlation (its timeline row's ``correlation``)
        meta["collectives"] = {
            "fields": ["correlation", "collective", "group", "seq"],
            "rows": [[corr, *info] for corr, info in sorted(tables.collectives.items())],
        }
    return meta


register(
    Importer(
        name="kineto",
        description="PyTorch/Kineto chrome trace (.json, .json.gz)",
        sniff=sniff_kineto,
        load=load_kineto,
    )
)
