"""Tools over one profile: ``summary``, ``top``, ``tree`` and ``source``."""

from __future__ import annotations

import difflib
from typing import Annotated, Any

from pydantic import Field

from ...analysis.summary import summarize
from ...analysis.views import Grouped
from ..bounds import DEFAULT_LIMIT, DEFAULT_MAX_BYTES, MAX_LIMIT, bounded, clip, int_option
from ..failure import ToolFailure
from ..opened import Opened, opened
from ..registry import tool
from ..roots import source_roots
from ._common import grouped, line_places, metric_of, nodes_by_key, tree_of, tree_profile
from .options import By, Limit, MaxBytes, Metric, Path, Regex

NODES_PER_ROW = 3


def _rows(entry: Opened, g: Grouped, metric: str) -> list[dict[str, Any]]:
    total = g.total.get(metric, 0.0)
    places = line_places(entry) if g.by == "line" else {}
    nodes = nodes_by_key(entry, g.by, metric)
    out = []
    for key, values in g.rows:
        value = values.get(metric, 0.0)
        if not value:
            continue  # nothing of this metric here
        row: dict[str, Any] = {"key": key, "value": value, "pct": round(100 * value / total, 3) if total else None}
        if key is not None and key in places:
            file, line, function = places[key]
            row |= {"file": file, "line": line, "function": function}
        if key is not None:
            row["nodes"] = nodes.get(key, [])[:NODES_PER_ROW]
        row["metrics"] = values
        out.append(row)
    return out


@tool("summary")
def summary(path: Path) -> dict[str, Any]:
    """What a profile or trace is: where it came from, devices, what time means, totals, the stored
    metrics, and the three heaviest lines and kernels (their keys work in top, tree and source). Start here."""
    entry = opened(path)
    p = entry.profile
    s = summarize(p)
    metric = metric_of(p, None)
    tl = p.timeline
    doc: dict[str, Any] = {
        "path": path,
        "source": clip(s.source),
        "date": s.date,
        "host": s.host,
        "devices": list(s.devices),
        "rank": s.rank,
        "time_meaning": s.time_meaning,
        "time_ms": s.time_ns / 1e6,
        "wall_ms": None if s.wall_ns is None else s.wall_ns / 1e6,
        "user_line_share_pct": None if s.user_share is None else round(100 * s.user_share, 2),
        "coverage": s.coverage,
        "metrics": p.metric_names,
        "contexts": len(p),
        "timeline_rows": 0 if tl is None else len(tl),
        "heaviest": {},
        "next": [
            "top(path, by='line'|'module'|'op'|'kernel', metric=...)",
            "tree(path, node=N) for a row's nodes",
            "source(path, key=KEY) for a line key",
            "findings(path)",
            "timeline(path)" if tl is not None and len(tl) else "timeline needs a trace with a timeline",
        ],
    }
    for by in ("line", "kernel"):
        rows = _rows(entry, grouped(entry, by, metric), metric)[:3]
        doc["heaviest"][by] = [{k: r[k] for k in ("key", "value", "pct", "nodes") if k in r} for r in rows]
    doc["metric"] = metric
    return doc


@tool("top")
def top(
    path: Path,
    by: By = "line",
    metric: Metric = None,
    limit: Limit = DEFAULT_LIMIT,
    include: Regex = None,
    exclude: Regex = None,
    max_bytes: MaxBytes = DEFAULT_MAX_BYTES,
) -> dict[str, Any]:
    """The heaviest source lines, functions, modules, ops or kernels by any stored metric (self values:
    what has this context innermost, as kernelscope view --by). Each row has a key (for source and diff),
    pct of the total, every stored metric, and up to 3 tree node ids (for tree). key null = time with no
    such context (for line: unattributed)."""
    entry = opened(path)
    limit = int_option("limit", limit, 1, MAX_LIMIT)
    metric = metric_of(entry.profile, metric)
    g = grouped(entry, by, metric, include, exclude)
    doc = {"path": path, "by": by, "metric": metric, "total": g.total}
    return bounded(doc, "rows", _rows(entry, g, metric), limit, max_bytes)


@tool("tree")
def tree(
    path: Path,
    node: Annotated[
        int, Field(description="the subtree's root: 0 is the whole profile; ids come from top rows and tree rows")
    ] = 0,
    depth: Annotated[int, Field(description="levels below node to show (default 3, at most 50)")] = 3,
    metric: Metric = None,
    limit: Limit = 40,
    min_pct: Annotated[
        float, Field(description="leave out nodes under this % of node's inclusive value (default 1)")
    ] = 1.0,
    max_bytes: MaxBytes = DEFAULT_MAX_BYTES,
) -> dict[str, Any]:
    """A subtree of the calling-context tree (source line → module → op → kernel): node ids, parents,
    kinds, labels, inclusive and self values, and how many children each has. When limit cuts, the
    heaviest nodes stay (the answer stays a connected tree); call tree again on a row's node to go deeper."""
    entry = opened(path)
    metric = metric_of(entry.profile, metric)
    depth = int_option("depth", depth, 0, 50)
    limit = int_option("limit", limit, 1, MAX_LIMIT)
    if not 0.0 <= min_pct <= 100.0:
        raise ToolFailure("bad_option", f"min_pct={min_pct}: must be between 0 and 100", option="min_pct")
    p = tree_profile(entry)
    if not 0 <= node < len(p):
        raise ToolFailure("no_such_node", f"node {node}: this profile's nodes are 0 to {len(p) - 1}", node=node)
    tv = tree_of(entry, metric)
    incl = tv.inclusive[metric]
    excl = p.exclusive(metric)
    at = {n: i for i, n in enumerate(tv.order)}
    start = at[node]
    d0 = tv.depth[start]
    top_value = abs(float(incl[node]))
    floor = top_value * min_pct / 100.0
    sub: list[int] = []
    for i in range(start, len(tv.order)):
        d = tv.depth[i]
        if i > start and d <= d0:
            break
        n = tv.order[i]
        if d - d0 <= depth and (n == node or abs(float(incl[n])) >= floor):
            sub.append(n)
    keep = _heaviest_connected(sub, p.parent.tolist(), incl, node, limit)
    kids = p.children
    shown = set(keep)
    rows = []
    for n in keep:
        f = p.frame_of(n)
        row: dict[str, Any] = {
            "node": n,
            "parent": None if n == 0 else int(p.parent[n]),
            "depth": tv.depth[at[n]] - d0,
            "kind": f.kind.value,
            "label": clip(f.label()),
        }
        if f.file:
            row |= {"file": f.file, "line": f.line}
        row |= {
            "inclusive": float(incl[n]),
            "self": float(excl[n]),
            "pct": round(100 * float(incl[n]) / top_value, 3) if top_value else None,
            "children": len(kids[n]),
            "children_shown": sum(1 for c in kids[n] if c in shown),
        }
        rows.append(row)
    doc = {"path": path, "node": node, "metric": metric, "total": float(incl[0]) if len(p) else 0.0}
    out = bounded(doc, "rows", rows, limit, max_bytes)
    out["total_rows"] = len(sub)  # nodes within depth and min_pct, before limit and max_bytes
    out["truncated"] = out["returned"] < len(sub)
    return out


def _heaviest_connected(sub: list[int], parent: list[int], incl: Any, root: int, limit: int) -> list[int]:
    """Up to ``limit`` of ``sub`` (pre-order), heaviest first, each with its parent; kept in pre-order."""
    if len(sub) <= limit:
        return sub
    inside = set(sub)
    chosen: set[int] = {root}
    for n in sorted(sub, key=lambda n: -abs(float(incl[n]))):
        if len(chosen) >= limit:
            break
        if n not in chosen and parent[n] in chosen and parent[n] in inside:
            chosen.add(n)
    return [n for n in sub if n in chosen]


@tool("source")
def source(
    path: Path,
    key: Annotated[
        str | None, Field(description="a line key \"path/file.py:42\" from top(by='line') or findings")
    ] = None,
    node: Annotated[int | None, Field(description="or a tree node id: its innermost source line")] = None,
    context: Annotated[int, Field(description="lines to show each side of the line (default 5, at most 50)")] = 5,
    metric: Metric = None,
    max_bytes: MaxBytes = DEFAULT_MAX_BYTES,
) -> dict[str, Any]:
    """The source lines around a line key or tree node, read from the file when it is a text file under the
    server's source roots (its working folder, or the folders given with --source-root), each with that
    line's self value of the metric. Without the file, the key's metrics alone and why the text is missing."""
    entry = opened(path)
    metric = metric_of(entry.profile, metric)
    context = int_option("context", context, 0, 50)
    file, line, function, key = _place(entry, key, node)
    g = grouped(entry, "line", metric)
    by_key = dict(g.rows)
    total = g.total.get(metric, 0.0)
    values = by_key.get(key, {})
    value = values.get(metric, 0.0)
    roots = source_roots()
    found = roots.resolve(file)
    source = roots.read(file) if found is not None else None
    doc: dict[str, Any] = {
        "path": path,
        "key": key,
        "file": file,
        "line": line,
        "function": function,
        "metric": metric,
        "value": value,
        "pct": round(100 * value / total, 3) if total else None,
        "metrics": values,
        "resolved": found,
    }
    rows: list[dict[str, Any]] = []
    if found is None or source is None:
        doc["resolved"] = None
        doc["source_available"] = False
        doc["reason"] = (
            f"{file} is not a readable text file under the source roots ({', '.join(roots.roots) or 'none'}); "
            "start the server with --source-root DIR to show files elsewhere"
        )
    else:
        doc["source_available"] = True
        lines = _read_lines(source, line - context, line + context)
        if not any(number == line for number, _ in lines):
            doc["reason"] = f"{found} has fewer than {line} lines (changed since it was profiled?)"
        for number, text in lines:
            lk = f"{file}:{number}"
            v = by_key.get(lk, {}).get(metric)
            rows.append({"line": number, "text": clip(text.rstrip("\n"), 300), "value": v, "here": number == line})
    return bounded(doc, "lines", rows, 2 * context + 1, max_bytes)


def _place(entry: Opened, key: str | None, node: int | None) -> tuple[str, int, str, str]:
    places = line_places(entry)
    if (key is None) == (node is None):
        raise ToolFailure("bad_option", "give exactly one of key (a line key) or node (a tree node id)", option="key")
    if key is not None:
        if key not in places:
            close = _close_keys(key, places)
            raise ToolFailure(
                "no_such_key",
                f"no source line {key!r} in this profile; line keys come from top(by='line') rows and findings",
                key=key,
                close=close,
            )
        file, line, function = places[key]
        return file, line, function, key
    p = tree_profile(entry)
    assert node is not None
    if not 0 <= node < len(p):
        raise ToolFailure("no_such_node", f"node {node}: this profile's nodes are 0 to {len(p) - 1}", node=node)
    for n in [node, *p.ancestors(node)]:
        f = p.frame_of(n)
        if f.file and f.line:
            return f.file, f.line, f.name, f"{f.file}:{f.line}"
    raise ToolFailure("no_such_key", f"node {node} has no source line above it (unattributed)", node=node)


def _close_keys(key: str, places: dict[str, tuple[str, int, str]]) -> list[str]:
    """Keys an agent may have meant: the nearest lines of the same file, else similar spellings."""
    file, _, number = key.rpartition(":")  # the caller's text, not a stored identity
    same = [(abs(line - int(number)), k) for k, (f, line, _) in places.items() if f == file] if number.isdigit() else []
    if same:
        return [k for _, k in sorted(same)[:3]]
    return difflib.get_close_matches(key, list(places), n=3, cutoff=0.6)


def _read_lines(lines: list[str], first: int, last: int) -> list[tuple[int, str]]:
    return [(n, lines[n - 1]) for n in range(max(1, first), min(last, len(lines)) + 1)]
