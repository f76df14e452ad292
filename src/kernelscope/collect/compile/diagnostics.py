"""Compile diagnostics: graph breaks, recompiles and compile times, as records and as JSON.

Pure apart from :func:`user_call_site`, which reads the interpreter's call stack. Builds
:class:`GraphBreak` and :class:`Recompile` from what Dynamo hands the capture's hooks, per-frame
compile records from Dynamo's compilation metrics (duck-typed), and the JSON document stored in
``profile.metadata["compile"]``. Time in compiled graphs vs. eager is in :mod:`.runtime`.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...attribute.userframes import display_path, is_user_file
from ..own_frames import is_own_file
from .provenance import GraphRecord, original_function, parse_stack
from .sites import CompiledCallable

SCHEMA = 1


@dataclass(frozen=True)
class GraphBreak:
    reason: str
    type: str
    file: str
    line: int
    function: str
    compile_id: str | None


@dataclass(frozen=True)
class Recompile:
    reason: str  # first guard failure
    kind: str  # shape | dtype | value | type | identity | other
    guard_file: str  # where the guarded value is used (from the guard's user stack)
    guard_line: int
    function: str  # the recompiled function
    def_file: str
    def_line: int
    file: str  # the user's call that triggered it
    line: int
    compile_id: str | None


# --- records from Dynamo's hooks ---------------------------------------------------------------


def graph_break(reason: str, exc: Any, stack: Any, compile_id: str | None) -> GraphBreak:
    """A break from Dynamo's ``log_graph_break(reason, exc)`` and the user stack being traced."""
    user = [f for f in (stack or []) if is_user_file(f.filename)]
    where = user[-1] if user else None
    gb_type = getattr(exc, "gb_type", None) or type(exc).__name__
    text = break_reason(str(gb_type), str(getattr(exc, "msg", "") or reason))
    return GraphBreak(
        reason=text,
        type=str(gb_type),
        file=display_path(where.filename) if where else "",
        line=int(where.lineno or 0) if where else 0,
        function=original_function(where.name) if where else "",
        compile_id=compile_id,
    )


def recompile(reasons: Sequence[str], code: Any, call_site: tuple[str, int], compile_id: str | None) -> Recompile:
    """A recompile of ``code`` from Dynamo's failed-guard reasons and the user's call site."""
    full = str(reasons[0]) if reasons else ""
    reason = guard_text(full) if full else "unknown (Dynamo found no failing guard)"
    used = parse_stack(full)
    file, line = call_site
    return Recompile(
        reason=reason,
        guard_file=used[-1].file if used else "",
        guard_line=used[-1].line if used else 0,
        kind=guard_kind(reason),
        function=original_function(code.co_name),
        def_file=display_path(code.co_filename),
        def_line=int(code.co_firstlineno),
        file=file,
        line=line,
        compile_id=compile_id,
    )


def guard_kind(reason: str) -> str:
    text = reason.lower()
    if "size mismatch" in text or "stride mismatch" in text or "dim()" in text or ".size()" in text:
        return "shape"
    if "dtype" in text:
        return "dtype"
    if "device" in text:
        return "device"
    if "type(" in text or "check_type_id" in text or "type mismatch" in text:
        return "type"
    if "id(" in text or "check_obj_id" in text:
        return "identity"
    if "==" in text or "!=" in text:
        return "value"
    return "other"


def _first_line(text: str) -> str:
    text = str(text).strip()
    return text.splitlines()[0].strip() if text else ""


def break_reason(gb_type: str, message: str) -> str:
    """``Failed to trace builtin operator: Dynamo does not know how to trace builtin operator `print` ...``."""
    for text in message.splitlines():
        text = text.strip()
        if text.startswith("Explanation:"):
            return f"{gb_type}: {text[len('Explanation:') :].strip()}"
    return gb_type or _first_line(message)


def guard_text(reason: str) -> str:
    """``1/0: scale == 0.5   # x = f(x) * scale  # a.py:16 in fn`` → ``scale == 0.5``."""
    text = _first_line(reason)
    head, sep, rest = text.partition(": ")
    if sep and "/" in head and head.replace("/", "").isdigit():
        text = rest
    return text.split("  #", 1)[0].strip()


def user_call_site(code: Any) -> tuple[str, int]:
    """The user's line whose call made Dynamo recompile ``code``.

    Innermost first, the stack is: kernelscope/Dynamo frames, then (for a resumed frame) the
    user function that was split by a graph break, then torch's call wrappers, then the call.
    """
    split_fn = (
        (code.co_filename, original_function(code.co_name)) if code.co_name != original_function(code.co_name) else None
    )
    frame: Any = sys._getframe(1)
    seen_library = False
    while frame is not None:
        f_code = frame.f_code
        if is_user_file(f_code.co_filename):
            if split_fn is not None and (f_code.co_filename, f_code.co_name) == split_fn:
                split_fn, seen_library = None, False  # skip the function the graph break split
            elif seen_library:
                return display_path(f_code.co_filename), int(frame.f_lineno or 0)
        else:
            seen_library = True
        frame = frame.f_back
    return "", 0


# --- compile times from Dynamo's compilation metrics -------------------------------------------


def compiles_from_metrics(metrics: Iterable[Any], start_us: int) -> list[dict[str, Any]]:
    """One entry per frame compile recorded since ``start_us`` (metrics are duck-typed)."""
    out: list[dict[str, Any]] = []
    for m in metrics:
        start = getattr(m, "start_time_us", None) or 0
        if start and start < start_us:
            continue
        name = getattr(m, "co_name", None)
        if name is None:
            continue  # backward-only records carry no frame
        out.append(
            {
                "compile_id": _str_or_none(getattr(m, "compile_id", None)),
                "function": original_function(str(name)),
                "code_name": str(name),
                "file": display_path(str(getattr(m, "co_filename", "") or "")),
                "line": int(getattr(m, "co_firstlineno", 0) or 0),
                "compile_time_s": _float(getattr(m, "entire_frame_compile_time_s", None)),
                "backend_time_s": _float(getattr(m, "backend_compile_time_s", None)),
                "inductor_time_s": _float(getattr(m, "inductor_compile_time_s", None)),
                "graph_ops": int(getattr(m, "graph_op_count", 0) or 0),
                "recompile_reason": getattr(m, "recompile_reason", None),
                "failed": getattr(m, "fail_type", None),
            }
        )
    return out


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def _float(value: Any) -> float | None:
    return None if value is None else round(float(value), 6)


# --- the JSON document -------------------------------------------------------------------------


def diagnostics_doc(
    *,
    provenance: bool,
    disable_caches: bool,
    warnings: Sequence[str],
    graph_breaks: Sequence[GraphBreak],
    recompiles: Sequence[Recompile],
    compiles: Sequence[dict[str, Any]],
    graphs: Sequence[GraphRecord],
    runtime: Mapping[str, float],
    callables: Sequence[CompiledCallable] = (),
    calls: Mapping[str, tuple[str, int]] | None = None,
) -> dict[str, Any]:
    """JSON-able compile diagnostics for ``profile.metadata["compile"]``. ``callables``: what the program passed
    to ``torch.compile`` and where; ``calls``: per compile id, the user line whose call compiled."""
    calls = calls or {}
    compiles = [_with_sites(c, callables, calls) for c in compiles]
    out: dict[str, Any] = {
        "schema": SCHEMA,
        "provenance": provenance,
        "caches": {
            "fx_graph_cache": "disabled while profiling" if disable_caches else "unchanged",
            "autograd_cache": "disabled while profiling" if disable_caches else "unchanged",
            "note": "cache hits skip Inductor's codegen and hide provenance; the C++ build cache stays on",
        },
        "warnings": list(warnings),
        "graph_breaks": _count_breaks(graph_breaks),
        "recompiles": [
            {
                "reason": r.reason,
                "guard": r.kind,
                "guard_file": r.guard_file,
                "guard_line": r.guard_line,
                "function": r.function,
                "def_file": r.def_file,
                "def_line": r.def_line,
                "file": r.file,
                "line": r.line,
                "compile_id": r.compile_id,
            }
            for r in recompiles
        ],
        "callables": [
            {"name": c.name, "def_file": c.def_file, "def_line": c.def_line, "file": c.file, "line": c.line}
            for c in callables
        ],
        "compiles": list(compiles),
        "frames": _frames(compiles, graph_breaks),
        "graphs": [
            {
                "graph_id": g.graph_id,
                "backward": g.backward,
                "compile_id": g.compile_id,
                "compile_time_s": round(g.compile_time_s, 6),
                "kernels": len(g.kernels),
                "kernel_calls": sum(len(c) for c in g.kernels.values()),
                "extern_calls": sum(len(c) for c in g.externs.values()),
            }
            for g in graphs
        ],
    }
    if runtime:
        out["runtime"] = dict(runtime)
    doc: dict[str, Any] = json.loads(json.dumps(out, default=str))
    return doc


def _with_sites(
    compile_: dict[str, Any], callables: Sequence[CompiledCallable], calls: Mapping[str, tuple[str, int]]
) -> dict[str, Any]:
    """A compile record with the user's lines: the call that compiled it, and the ``torch.compile`` of its
    callable (when the compiled code is that callable's, not a function it calls)."""
    out = dict(compile_)
    call = calls.get(str(compile_.get("compile_id")))
    if call is not None and call[0]:
        out["call_file"], out["call_line"] = call
    for c in callables:
        if (c.def_file, c.def_line) == (compile_.get("file"), compile_.get("line")):
            out["compiled"], out["compile_file"], out["compile_line"] = c.name, c.file, c.line
            break
    return out


def _count_breaks(breaks: Sequence[GraphBreak]) -> list[dict[str, Any]]:
    counted: dict[tuple[str, str, int], dict[str, Any]] = {}
    for gb in breaks:
        key = (gb.reason, gb.file, gb.line)
        entry = counted.get(key)
        if entry is None:
            counted[key] = {
                "reason": gb.reason,
                "type": gb.type,
                "file": gb.file,
                "line": gb.line,
                "function": gb.function,
                "compile_id": gb.compile_id,
                "count": 1,
            }
        else:
            entry["count"] += 1
    return list(counted.values())


def _is_own(file: str | None) -> bool:
    return bool(file) and is_own_file(os.path.abspath(str(file)))


def _frames(compiles: Sequence[dict[str, Any]], breaks: Sequence[GraphBreak]) -> list[dict[str, Any]]:
    """Per user function: graphs (the function and its resumed parts), compiles (recompiles too), time."""
    frames: dict[tuple[str, str], dict[str, Any]] = {}
    codes: dict[tuple[str, str], set[str]] = {}
    for c in compiles:
        if _is_own(c["file"]):
            continue  # kernelscope's module hook, which Dynamo compiles as a frame of its own
        file, line = c["file"], c["line"]
        if not is_user_file(file) and c.get("call_file"):
            # torch's own code compiled on the program's behalf (a wrapper Dynamo traces into): the user's line
            # is the call that compiled it
            file, line = c["call_file"], c["call_line"]
        key = (file, c["function"])
        entry = frames.setdefault(
            key,
            {
                "function": c["function"],
                "file": file,
                "line": line,
                "graphs": 0,
                "compiles": 0,
                "compile_time_s": 0.0,
            },
        )
        entry["compiles"] += 1
        for k in ("compiled", "compile_file", "compile_line", "call_file", "call_line"):
            if k in c and k not in entry:
                entry[k] = c[k]
        if c["graph_ops"]:
            codes.setdefault(key, set()).add(c["code_name"])
        if c["code_name"] == c["function"] and file == c["file"]:
            entry["line"] = c["line"]
        entry["compile_time_s"] = round(entry["compile_time_s"] + (c["compile_time_s"] or 0.0), 6)
    for key, entry in frames.items():
        entry["graphs"] = len(codes.get(key, ()))
        entry["graph_breaks"] = len(
            {(b.file, b.line) for b in breaks if b.file == entry["file"] and b.function == entry["function"]}
        )
    return list(frames.values())
