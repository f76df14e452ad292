"""The inspector's result and its ``--json`` form (schema 1, documented in docs/triton.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .analyze import LineStat, Problem, WriteMap, line_stats, problems, write_maps
from .records import Access, Launch

SCHEMA = 1


@dataclass(frozen=True)
class InspectReport:
    launches: tuple[Launch, ...]
    lines: tuple[LineStat, ...]
    problems: tuple[Problem, ...]
    write_maps: tuple[WriteMap, ...] = ()


def build_report(launches: list[Launch], accesses: list[Access], *, with_write_maps: bool = False) -> InspectReport:
    return InspectReport(
        launches=tuple(launches),
        lines=tuple(line_stats(launches, accesses)),
        problems=tuple(problems(launches, accesses)),
        write_maps=tuple(write_maps(launches, accesses)) if with_write_maps else (),
    )


def to_json(report: InspectReport) -> dict[str, Any]:
    out: dict[str, Any] = {
        "schema": SCHEMA,
        "launches": [
            {
                "kernel": la.kernel,
                "grid": list(la.grid),
                "file": la.file,
                "line": la.line,
                "programs": la.programs,
                "called_from": [{"file": f, "line": n} for f, n in la.callers],
            }
            for la in report.launches
        ],
        "lines": [_line(s) for s in report.lines],
        "problems": [
            {
                "kind": p.kind,
                "kernel": p.kernel,
                "file": p.file,
                "line": p.line,
                "program_id": list(p.program_id),
                "arg": p.arg,
                "detail": p.detail,
            }
            for p in report.problems
        ],
    }
    if report.write_maps:
        out["write_maps"] = [
            {
                "launch": w.launch,
                "kernel": w.kernel,
                "arg": w.arg,
                "shape": list(w.shape),
                "grid": list(w.grid),
                "owner": list(w.owner),
            }
            for w in report.write_maps
        ]
    return out


def _line(s: LineStat) -> dict[str, Any]:
    row: dict[str, Any] = {
        "kernel": s.kernel,
        "file": s.file,
        "line": s.line,
        "op": s.op,
        "bytes": s.bytes,
        "elements": s.elements,
        "masked_fraction": s.masked_fraction,
    }
    if s.dot_shapes:
        row["dot_shapes"] = [list(shape) for shape in s.dot_shapes]
        row["flops"] = s.flops
    return row
