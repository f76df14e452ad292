"""The data a report embeds: the profile's columns, its groupings and what the header says.

Plain JSON-able values, no HTML. The tree travels columnar (``parent``/``frame`` per node,
one exclusive column per metric); the page derives inclusive values. Grouping keys come
from :func:`kernelscope.analysis.views.node_keys`, so the report's table groups exactly
as ``kernelscope view --by`` does. Findings come from the advisor when it runs.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import numpy as np
import numpy.typing as npt

from ...analysis.per_step import scale_of, statement
from ...analysis.summary import coverage_note
from ...analysis.views import GROUPINGS, node_keys, own_nodes
from ...collect.checkpoint import abrupt_note
from ...model import FrameKind, Profile
from ...model.devices import devices_of
from ...trust.sources import SourceRoots
from ...version import __version__
from .sources import capture_sources
from .timeline import timeline_payload

SCHEMA = 1

# What "time" means, by where the profile came from (shown in the header).
_TIME_MEANING = {
    True: "time_ns is accelerator kernel time (device kernels' durations).",
    False: "time_ns is the self time of CPU ops/kernels (no accelerator in this run).",
}


@dataclass(frozen=True)
class Findings:
    items: tuple[dict[str, Any], ...]
    error: str | None  # why the advisor gave nothing, when it failed


def _number(value: float) -> int | float:
    if not math.isfinite(value):
        return 0
    return int(value) if value.is_integer() else round(value, 6)


def _column(col: npt.NDArray[np.float64]) -> list[int] | list[float]:
    """A metric column as JSON numbers: integers when every value is integral (most are)."""
    col = np.nan_to_num(col, nan=0.0, posinf=0.0, neginf=0.0)
    if bool(np.all(col == np.round(col))) and bool(np.all(np.abs(col) < 2**53)):
        ints: list[int] = col.astype(np.int64).tolist()
        return ints
    floats: list[float] = np.round(col, 6).tolist()
    return floats


def _frames(profile: Profile) -> dict[str, list[Any]]:
    kinds = [k.value for k in FrameKind]
    kind_index = {k: i for i, k in enumerate(FrameKind)}
    out: dict[str, list[Any]] = {"kind": [], "label": [], "file": [], "line": [], "kinds": kinds}
    for f in profile.frames:
        out["kind"].append(kind_index[f.kind])
        out["label"].append(f.located_label())  # (a compiled region: with its torch.compile line)
        out["file"].append(f.file)
        out["line"].append(f.line)
    return out


def _groups(profile: Profile) -> dict[str, dict[str, list[Any]]]:
    out: dict[str, dict[str, list[Any]]] = {}
    native = any(f.kind is FrameKind.NATIVE for f in profile.frames)
    for by in GROUPINGS:
        if by in ("layer", "line-layer") and not native:
            continue  # (groupings of sampled native frames: none in this profile)
        keys = node_keys(profile, by)
        table: dict[str, int] = {}
        index = [-1 if k is None else table.setdefault(k, len(table)) for k in keys]
        # count is the calls of the key's own frames (views.Grouped), never what runs under them
        own = own_nodes(profile, by).astype(int).tolist()
        out[by] = {"keys": list(table), "node": index, "own": own}
    return out


def run_advisor(profile: Profile) -> Findings:
    """The advisor's findings, or why there are none. The report is written either way."""
    try:
        from ...analysis.advisor import run_rules

        return Findings(tuple(f.to_json() for f in run_rules(profile)), None)
    except Exception as exc:  # a failing rule must not cost the user the whole report
        return Findings((), f"{type(exc).__name__}: {exc}")


def ranks_payload(profile: Profile) -> tuple[dict[str, Any] | None, str | None]:
    """The Ranks view's data: the cross-rank analysis of a merged job (``kernelscope ranks --json``), or None.

    The analysis is the advisor's (computed once per profile); for a store, ``kernelscope report`` gives
    the store's own (matched by NCCL seq_num). A failure costs the view, never the report.
    """
    try:
        from ...analysis.advisor.ranks import job_report

        report = job_report(profile)
    except Exception as exc:  # a failing analysis must not cost the user the whole report
        return None, f"{type(exc).__name__}: {exc}"
    if report is None:
        return None, None
    return _finite(report.to_json()), None


def _finite(value: Any) -> Any:
    """JSON the page can embed: NaN/inf (an empty median) as 0, everything else unchanged."""
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    if isinstance(value, float):
        return _number(value)
    return value


def header(profile: Profile) -> dict[str, Any]:
    """What was run, when, on what, and what "time" means here."""
    meta = profile.metadata
    raw_source = meta.get("source")
    source: dict[str, Any] = raw_source if isinstance(raw_source, dict) else {}
    command = meta.get("command")
    if isinstance(command, list):
        command = " ".join(str(c) for c in command)
    names = [d.name or f"{d.id} {d.arch}".strip() for d in devices_of(meta)]
    device_run = meta.get("device_run")
    if device_run is None:
        device_run = any(f.kind is FrameKind.KERNEL and f.device and f.device != "cpu" for f in profile.frames)
    return {
        "title": str(meta.get("name") or command or source.get("path") or "kernelscope profile"),
        "command": str(command) if command else None,
        "source_format": source.get("format"),
        "source_path": source.get("path"),
        "start_time": _when(meta.get("start_time")),
        "host": meta.get("host"),
        "devices": [f"{n} × {name}" if n > 1 else name for name, n in Counter(names).items()],
        "rank": meta.get("rank"),
        "world_size": meta.get("world_size"),
        "time_meaning": _TIME_MEANING[bool(device_run)],
        "wall_time_ns": _wall_ns(profile),
        "coverage": coverage_note(meta),
        "per_step": _per_step(meta),
        "ended": abrupt_note(meta),
        "tool": f"kernelscope {__version__}",
    }


def _per_step(meta: dict[str, Any]) -> dict[str, Any] | None:
    """A sample of whole steps: the factor that turns its totals into per-step values, and the words."""
    scale = scale_of(meta)
    words = statement(scale)
    return None if words is None else {"factor": scale.factor, "statement": words}


def _wall_ns(profile: Profile) -> int | None:
    """First start to last end over the timeline: the wall time the profile covers (None without one)."""
    tl = profile.timeline
    return tl.span_ns() if tl is not None else None


def _when(value: Any) -> Any:
    """A start time in seconds since the epoch as UTC ISO text; anything else unchanged."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 1e11:
        return datetime.fromtimestamp(value, tz=timezone.utc).isoformat(timespec="seconds")
    return value


def build_payload(
    profile: Profile,
    *,
    findings: Findings | None = None,
    sources: bool = True,
    roots: SourceRoots | None = None,
) -> dict[str, Any]:
    """The report's data. Source snippets come only from files under ``roots`` (default: the current folder)."""
    if findings is None:
        findings = run_advisor(profile)
    metrics = {m: _column(profile.exclusive(m)) for m in profile.metric_names}
    ranks, ranks_error = ranks_payload(profile)
    return {
        "schema": SCHEMA,
        "header": header(profile),
        "frames": _frames(profile),
        "parent": profile.parent.tolist(),
        "frame": profile.frame.tolist(),
        "metrics": metrics,
        "groups": _groups(profile),
        "findings": list(findings.items),
        "findings_error": findings.error,
        "sources": capture_sources(profile, roots or SourceRoots.here()) if sources else {},
        "timeline": timeline_payload(profile),
        "ranks": ranks,
        "ranks_error": ranks_error,
        "metadata": _short(profile.metadata),
    }


def _short(value: Any, depth: int = 0) -> Any:
    """Metadata for the info panel, with long lists and deep nesting cut."""
    if depth > 4:
        return "…"
    if isinstance(value, dict):
        return {str(k): _short(v, depth + 1) for k, v in list(value.items())[:50]}
    if isinstance(value, (list, tuple)):
        items = [_short(v, depth + 1) for v in list(value)[:20]]
        if len(value) > 20:
            items.append(f"… {len(value) - 20} more")
        return items
    if isinstance(value, float):
        return _number(value)
    if value is None or isinstance(value, (bool, int, str)):
        return value if not isinstance(value, str) or len(value) < 2000 else value[:2000] + "…"
    return str(value)[:2000]
