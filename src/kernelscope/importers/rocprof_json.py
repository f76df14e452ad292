"""rocprofv3 JSON traces (``--output-format json``, ``<pid>_results.json``): the ``rocprofiler-sdk-tool`` layout.

``{"rocprofiler-sdk-tool": [{"metadata": {"pid": ...}, "agents": [...], "kernel_symbols": [...],
"strings": {"buffer_records": [{"kind": "HIP_RUNTIME_API", "operations": [names]}, ...]},
"buffer_records": {"kernel_dispatch": [...], "hip_api": [...], "memory_copy": [...], ...}}]}``, as
rocprofiler-sdk documents it and its own tests read it. A dispatch names its kernel by
``dispatch_info.kernel_id`` (→ ``kernel_symbols``), its device by ``agent_id`` (→ the agent's
``logical_node_id``) and its queue; a HIP call by ``operation`` (→ the HIP entry of
``strings.buffer_records``). Both carry ``correlation_id.internal``, by which the one engine joins them,
as in the CSV reader (``rocprof.py``). Timestamps are ns. roctx markers are not read from JSON.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

import msgspec

from ..attribute.engine import build_profile
from ..attribute.records import Kind, host_kind, is_comm_kernel
from ..attribute.tables import EventTables
from ..errors import BadInputError
from ..model import Profile
from ..trust.limits import read_file_capped
from .registry import Importer, register

__all__ = ["load_rocprof_json", "sniff_rocprof_json"]

_LIMIT = 1 << 62


def sniff_rocprof_json(path: str, head: bytes) -> bool:
    return head.lstrip()[:1] == b"{" and b'"rocprofiler-sdk-tool"' in head


def load_rocprof_json(path: str) -> Profile:
    try:
        doc = msgspec.json.decode(read_file_capped(path))
    except OSError as exc:
        raise BadInputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except msgspec.DecodeError as exc:
        raise BadInputError(f"{path}: truncated or malformed rocprofv3 JSON ({exc}); re-copy the trace") from None
    tools = doc.get("rocprofiler-sdk-tool") if isinstance(doc, dict) else None
    if isinstance(tools, dict):
        tools = [tools]
    if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools) or not tools:
        raise BadInputError(f"{path}: no rocprofiler-sdk-tool records; not a rocprofv3 JSON trace")
    warnings: Counter[str] = Counter()
    tables = EventTables(warnings)
    try:
        n = sum(_tool(t, tables) for t in tools)
        if not len(tables.device):
            raise BadInputError(f"{path}: no kernel dispatches in the rocprofv3 JSON (run with --kernel-trace)")
        if not len(tables.host):
            warnings["no hip_api records: kernels are not linked to their launches (run with --hip-trace)"] += 1
        tables.events_seen = n
        tables.host.finish()
        tables.device.finish()
        meta: dict[str, Any] = {"source": {"format": "rocprofv3-json", "path": os.path.abspath(path), "events": n}}
        return build_profile(tables, meta, warnings)
    finally:
        tables.close()


def _int(value: Any) -> int | None:
    if isinstance(value, dict):
        value = value.get("internal", value.get("handle"))
    return value if type(value) is int and 0 <= value < _LIMIT else None


def _span(rec: dict[str, Any]) -> tuple[int, int] | None:
    start, end = _int(rec.get("start_timestamp")), _int(rec.get("end_timestamp"))
    if start is None or end is None:
        return None
    return start, max(end - start, 0)


def _records(tool: dict[str, Any], key: str) -> list[dict[str, Any]]:
    records = tool.get("buffer_records")
    got = records.get(key) if isinstance(records, dict) else None
    return [r for r in got if isinstance(r, dict)] if isinstance(got, list) else []


def _symbols(tool: dict[str, Any]) -> dict[int, str]:
    syms = tool.get("kernel_symbols")
    items = syms.values() if isinstance(syms, dict) else syms if isinstance(syms, list) else []
    out: dict[int, str] = {}
    for s in items:
        if isinstance(s, dict) and type(s.get("kernel_id")) is int:
            name = s.get("formatted_kernel_name") or s.get("demangled_kernel_name") or s.get("kernel_name")
            if isinstance(name, str):
                out[s["kernel_id"]] = name
    return out


def _hip_names(tool: dict[str, Any]) -> list[str]:
    strings = tool.get("strings")
    entries = strings.get("buffer_records") if isinstance(strings, dict) else None
    for want in ("HIP_RUNTIME_API", "HIP_RUNTIME_API_EXT"):
        for e in entries if isinstance(entries, list) else []:
            if isinstance(e, dict) and e.get("kind") == want and isinstance(e.get("operations"), list):
                return [str(o) for o in e["operations"]]
    return []


def _agents(tool: dict[str, Any]) -> dict[int, int]:
    out: dict[int, int] = {}
    for a in tool.get("agents") or []:
        if isinstance(a, dict):
            handle, node = _int(a.get("id")), a.get("logical_node_id", a.get("node_id"))
            if handle is not None and type(node) is int:
                out[handle] = node
    return out


def _tool(tool: dict[str, Any], tables: EventTables) -> int:
    w = tables.warnings
    symbols, agents, hip = _symbols(tool), _agents(tool), _hip_names(tool)
    meta = tool.get("metadata")
    pid = meta.get("pid") if isinstance(meta, dict) else None
    n = 0
    for rec in _records(tool, "kernel_dispatch"):
        n += 1
        info = rec.get("dispatch_info")
        span = _span(rec)
        kid = info.get("kernel_id") if isinstance(info, dict) else None
        name = symbols.get(kid) if type(kid) is int else None
        if span is None or name is None or not isinstance(info, dict):
            w["kernel dispatches with a missing kernel, symbol or timestamp"] += 1
            continue
        corr = _int(rec.get("correlation_id"))
        agent = _int(info.get("agent_id"))
        dev = agents.get(agent, agent) if agent is not None else 0
        stream = _int(info.get("queue_id")) or 0
        kind = Kind.COMM if is_comm_kernel(name) else Kind.KERNEL
        row = (span[0], span[1], kind, tables.name_id(name), dev or 0, stream, -1 if corr is None else corr, n)
        tables.device.data.extend(row)
    for rec in _records(tool, "hip_api"):
        n += 1
        span, op = _span(rec), rec.get("operation")
        name = hip[op] if type(op) is int and 0 <= op < len(hip) else None
        if span is None or name is None:
            w["hip_api records with a missing name or timestamp"] += 1
            continue
        corr = _int(rec.get("correlation_id"))
        thread = tables.thread(pid, rec.get("thread_id"))
        label = tables.name_id(name)
        row2 = (thread, span[0], span[1], host_kind(Kind.RUNTIME, name), label, -1, -1 if corr is None else corr)
        tables.host.data.extend((*row2, -1, -1, 0, -1))
    return n


register(
    Importer(
        name="rocprofv3-json",
        description="rocprofv3 JSON trace (--output-format json)",
        sniff=sniff_rocprof_json,
        load=load_rocprof_json,
        priority=1,
    )
)
