"""Tools over analyses: ``findings`` (the advisor), ``timeline`` (GPU breakdown) and ``diff`` (two runs)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from ...analysis import advisor
from ...analysis.diff import BYS
from ...analysis.diff import diff as diff_profiles
from ...analysis.summary import device_names
from ...analysis.timeline import analyze, has_timeline
from ..bounds import DEFAULT_LIMIT, DEFAULT_MAX_BYTES, MAX_LIMIT, bounded, capped, choice, int_option
from ..failure import ToolFailure
from ..opened import opened
from ..registry import tool
from .options import Limit, MaxBytes, Metric, Path


@tool("findings")
def findings(
    path: Path,
    rule: Annotated[
        str | None, Field(description="run only this advisor rule (kernelscope analyze --list-rules)")
    ] = None,
    limit: Limit = 10,
    max_bytes: MaxBytes = DEFAULT_MAX_BYTES,
) -> dict[str, Any]:
    """The advisor's findings, largest estimated saving first: rule, severity, title, evidence, the fix,
    and where (key "file:line" for source, module, device)."""
    entry = opened(path)
    limit = int_option("limit", limit, 1, MAX_LIMIT)
    only = None
    if rule is not None:
        choice("rule", rule, tuple(r.name for r in advisor.rules()))
        only = {rule}
    found = entry.get(f"findings:{rule}", lambda: advisor.run_rules(entry.profile, only))
    rows = []
    for f in found:
        row = f.to_json()
        if f.file and f.line:
            row = {"key": f"{f.file}:{f.line}", **row}
        rows.append(row)
    doc = {"path": path, "summary": advisor.summary(found, advisor.measured_ms(entry.profile))}
    return bounded(doc, "findings", rows, limit, max_bytes)


@tool("timeline")
def timeline(
    path: Path,
    top: Annotated[int, Field(description="idle gaps and sync lines to list per device (default 5, at most 100)")] = 5,
    limit: Limit = DEFAULT_LIMIT,
    max_bytes: MaxBytes = DEFAULT_MAX_BYTES,
) -> dict[str, Any]:
    """GPU timeline per device (TraceLens gpu_timeline definitions): busy, idle, computation, exposed
    communication and memcpy, the longest idle gaps and their causes, launch statistics, host-device syncs
    with their source lines. Needs a trace (or a profile imported from one)."""
    entry = opened(path)
    top = int_option("top", top, 0, 100)
    limit = int_option("limit", limit, 1, MAX_LIMIT)
    if not has_timeline(entry.profile):
        raise ToolFailure(
            "no_timeline",
            f"{path}: has no timeline (recorded or saved without one); give the trace file itself",
            path=path,
        )
    report = entry.get(f"timeline:{top}", lambda: analyze(entry.profile, top=top).to_json())
    doc = {
        "path": path,
        "device_names": device_names(entry.profile),
        **{k: v for k, v in report.items() if k != "schema"},
    }
    return capped(doc, limit, max_bytes)


@tool("diff")
def diff(
    path: Path,
    new: Annotated[str, Field(description="the run to compare with path (the baseline): a profile or trace")],
    by: Annotated[
        str, Field(description="grouping: " + ", ".join(BYS), json_schema_extra={"enum": list(BYS)})
    ] = "line",
    metric: Metric = None,
    limit: Limit = DEFAULT_LIMIT,
    max_bytes: MaxBytes = DEFAULT_MAX_BYTES,
) -> dict[str, Any]:
    """What changed between two runs (kernelscope diff): rows matched across moved lines and renamed
    kernels, largest |delta| first, in ms for time metrics; with the totals of both."""
    choice("by", by, tuple(BYS))
    limit = int_option("limit", limit, 1, MAX_LIMIT)
    base = opened(path)
    other = opened(new)
    if metric is not None and metric not in base.profile.metrics and metric not in other.profile.metrics:
        known = sorted(set(base.profile.metrics) | set(other.profile.metrics))
        raise ToolFailure("no_such_metric", f"metric {metric!r} is in neither profile", option="metric", choices=known)
    result = diff_profiles(base.profile, other.profile, by=by, metric=metric).to_json()
    rows = result.pop("rows")
    result.pop("schema", None)
    return bounded({"path": path, "new": new, **result}, "rows", rows, limit, max_bytes)
