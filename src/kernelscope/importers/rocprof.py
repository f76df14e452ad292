"""rocprofv3 CSV traces: ``<prefix>kernel_trace.csv``, joined with the ``<prefix>hip_api_trace.csv`` and
``<prefix>marker_api_trace.csv`` beside it when they are there.

Columns as rocprofv3 documents them (ROCm 6.2-7.x): the kernel trace ``Kind, Agent_Id, Queue_Id,
[Stream_Id,] Thread_Id, Dispatch_Id, Kernel_Id, Kernel_Name, Correlation_Id, Start_Timestamp,
End_Timestamp, ...`` (``Agent_Id`` an integer or ``"Agent 2"``; newer versions start with ``Guid``); the
API traces ``Domain, Function, Process_Id, Thread_Id, Correlation_Id, Start_Timestamp, End_Timestamp``.
Timestamps are ns. A kernel joins the HIP call that launched it by ``Correlation_Id`` (through the one
engine, ``attribute.engine``), markers (roctx ranges) are scopes around the calls; without the HIP trace
the kernels have no launch in the file and sit under ``[launched before trace]``, as in a Kineto trace.
"""

from __future__ import annotations

import csv
import os
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

from ..attribute.engine import build_profile
from ..attribute.records import Kind, host_kind, is_comm_kernel
from ..attribute.tables import EventTables
from ..errors import BadInputError
from ..model import Profile
from .registry import Importer, register

__all__ = ["load_rocprof", "sniff_rocprof"]

_KERNEL_HEADER = (b'"Kernel_Name"', b'"Correlation_Id"', b'"Start_Timestamp"', b'"End_Timestamp"')
_SUFFIX = "kernel_trace.csv"
_DIGITS = re.compile(r"(\d+)")


def sniff_rocprof(path: str, head: bytes) -> bool:
    first = head.split(b"\n", 1)[0]
    return all(h in first for h in _KERNEL_HEADER)


def load_rocprof(path: str) -> Profile:
    warnings: Counter[str] = Counter()
    tables = EventTables(warnings)
    try:
        n = _kernels(path, tables)
        sources = {"kernel_trace": os.path.abspath(path)}
        prefix = path[: -len(_SUFFIX)] if path.endswith(_SUFFIX) else None
        for kind, name in ((Kind.RUNTIME, "hip_api_trace.csv"), (Kind.SCOPE, "marker_api_trace.csv")):
            sibling = prefix + name if prefix is not None else None
            if sibling and os.path.isfile(sibling):
                n += _api(sibling, tables, kind)
                sources[name.removesuffix(".csv")] = os.path.abspath(sibling)
        if "hip_api_trace" not in sources:
            warnings["no hip_api_trace.csv beside the kernel trace: kernels are not linked to their launches"] += 1
        tables.events_seen = n
        tables.host.finish()
        tables.device.finish()
        meta: dict[str, Any] = {"source": {"format": "rocprofv3-csv", "path": os.path.abspath(path), "events": n}}
        meta["rocprof_files"] = sources
        return build_profile(tables, meta, warnings)
    finally:
        tables.close()


def _rows(path: str, need: tuple[str, ...]) -> Iterator[tuple[int, dict[str, str]]]:
    try:
        with open(path, newline="", encoding="utf-8", errors="replace") as fh:
            reader = csv.DictReader(fh)
            missing = [c for c in need if c not in (reader.fieldnames or [])]
            if missing:
                raise BadInputError(f"{path}: not a rocprofv3 trace CSV (no column {missing[0]!r})")
            yield from enumerate(reader, start=2)
    except csv.Error as exc:
        raise BadInputError(f"{path}: malformed CSV ({exc})") from None
    except OSError as exc:
        raise BadInputError(f"{path}: cannot read ({exc.strerror or exc})") from None


def _span(row: dict[str, str]) -> tuple[int, int] | None:
    try:
        start, end = int(row["Start_Timestamp"]), int(row["End_Timestamp"])
    except (TypeError, ValueError):
        return None
    if not 0 <= start < 1 << 62 or not 0 <= end < 1 << 62:
        return None
    return start, max(end - start, 0)


def _int(text: str | None) -> int | None:
    m = _DIGITS.search(text or "")
    return int(m.group(1)) if m else None


def _kernels(path: str, tables: EventTables) -> int:
    add = tables.device.data.extend
    w = tables.warnings
    n = 0
    for line, row in _rows(path, ("Kernel_Name", "Correlation_Id", "Start_Timestamp", "End_Timestamp")):
        n += 1
        span = _span(row)
        name = row.get("Kernel_Name")
        if span is None or not name:
            if row.get("End_Timestamp") is None:  # a row cut short: the file ends mid-line
                raise BadInputError(f"{path}: truncated CSV (line {line} is incomplete); re-copy the trace")
            w["kernel rows with a missing name or timestamp"] += 1
            continue
        corr = _int(row.get("Correlation_Id"))
        agent = _int(row.get("Agent_Id")) or 0
        stream = _int(row.get("Stream_Id")) if row.get("Stream_Id") else _int(row.get("Queue_Id"))
        kind = Kind.COMM if is_comm_kernel(name) else Kind.KERNEL
        add((span[0], span[1], kind, tables.name_id(name), agent, stream or 0, -1 if corr is None else corr, n))
        if n % 65536 == 0:
            tables.device.maybe_spill()
            add = tables.device.data.extend
    if n == 0:
        raise BadInputError(f"{path}: the kernel trace has no rows (nothing was recorded)")
    return n


def _api(path: str, tables: EventTables, base: Kind) -> int:
    add = tables.host.data.extend
    n = 0
    for _line, row in _rows(path, ("Function", "Thread_Id", "Correlation_Id", "Start_Timestamp", "End_Timestamp")):
        span = _span(row)
        name = row.get("Function")
        if span is None or not name:
            tables.warnings["API rows with a missing name or timestamp"] += 1
            continue
        n += 1
        thread = tables.thread(row.get("Process_Id"), row.get("Thread_Id"))
        if base is Kind.SCOPE:
            kind, label = tables.host_label(Kind.SCOPE, name)
            add((thread, span[0], span[1], kind, label, -1, -1, -1, -1, 0, -1))
        else:
            corr = _int(row.get("Correlation_Id"))
            kind = host_kind(Kind.RUNTIME, name)
            add((thread, span[0], span[1], kind, tables.name_id(name), -1, -1 if corr is None else corr, -1, -1, 0, -1))
        if n % 65536 == 0:
            tables.host.maybe_spill()
            add = tables.host.data.extend
    return n


register(
    Importer(
        name="rocprofv3-csv",
        description="rocprofv3 kernel trace (kernel_trace.csv, with hip_api_trace.csv beside it)",
        sniff=sniff_rocprof,
        load=load_rocprof,
    )
)
