"""``--json`` documents for views (schema 1, DESIGN.md)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import IO, Any

from ..analysis.views import Grouped, TreeView
from ..model import Profile

SCHEMA = 1


def tree_json(tv: TreeView, metrics: Sequence[str]) -> dict[str, Any]:
    p = tv.profile
    cols = {m: p.exclusive(m).tolist() for m in metrics}
    nodes: dict[int, dict[str, Any]] = {}
    root: dict[str, Any] | None = None
    for node in tv.order:
        f = p.frame_of(node)
        d: dict[str, Any] = {"kind": f.kind.value, "name": f.name}
        if f.file:
            d["file"] = f.file
            d["line"] = f.line
        if f.cls:
            d["class"] = f.cls
        if f.module:
            d["module"] = f.module
        if f.device:
            d["device"] = f.device
        if f.stream >= 0:
            d["stream"] = f.stream
        if f.kind.value == "part":
            d["estimated"] = True
        d["metrics"] = {m: cols[m][node] for m in metrics}
        d["children"] = []
        nodes[node] = d
        if node == 0:
            root = d
        else:
            nodes[int(p.parent[node])]["children"].append(d)
    return {"schema": SCHEMA, "metrics": list(metrics), "root": root}


def grouped_json(g: Grouped) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "by": g.by,
        "metrics": list(g.metrics),
        "rows": [{"key": k, "metrics": v} for k, v in g.rows],
        "total": g.total,
    }


def with_coverage(doc: dict[str, Any], profile: Profile) -> dict[str, Any]:
    """A live run's ``coverage`` metadata (what was recorded of the run) as ``doc["metadata"]``."""
    coverage = profile.metadata.get("coverage")
    if isinstance(coverage, dict):
        doc["metadata"] = {"coverage": coverage}
    ended = profile.metadata.get("ended_abruptly")  # a checkpoint of a killed run (collect/checkpoint.py)
    if isinstance(ended, dict):
        doc.setdefault("metadata", {})["ended_abruptly"] = ended
    return doc


def dump(doc: Any, out: IO[str] | None = None, depth_hint: int = 0) -> None:
    """json.dump with room for very deep trees (the C encoder recurses)."""
    old = sys.getrecursionlimit()
    need = 4 * depth_hint + 1000
    if need > old:
        sys.setrecursionlimit(need)
    try:
        # dumps, not dump: dump streams through the pure-Python encoder, quadratic on deep trees
        text = json.dumps(doc, separators=(",", ":"), allow_nan=False)
        (out or sys.stdout).write(text + "\n")
    finally:
        sys.setrecursionlimit(old)
