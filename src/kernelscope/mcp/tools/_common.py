"""What several tools share: the metric to use, the views every tool reads (cached per file)."""

from __future__ import annotations

import numpy as np

from ...analysis.views import (
    GROUPINGS,
    KEY_OF,
    Grouped,
    TreeOptions,
    TreeView,
    group,
    node_keys,
    own_nodes,
    simplify,
    tree_view,
)
from ...model import Profile
from ..bounds import choice
from ..failure import ToolFailure
from ..opened import Opened


def metric_of(profile: Profile, metric: str | None) -> str:
    names = profile.metric_names
    if metric is None:
        if "time_ns" in profile.metrics or not names:
            return "time_ns"
        return names[0]
    if metric not in profile.metrics:
        raise ToolFailure(
            "no_such_metric", f"metric {metric!r} is not stored in this profile", option="metric", choices=names
        )
    return metric


def tree_profile(entry: Opened) -> Profile:
    """The profile every tree node id refers to: steps merged, module instances grouped (as ``view``)."""
    return entry.get("tree_profile", lambda: simplify(entry.profile))


def tree_of(entry: Opened, metric: str) -> TreeView:
    """Every node, children heaviest first by ``metric`` (node ids are those of :func:`tree_profile`)."""
    p = tree_profile(entry)
    return entry.get(f"tree:{metric}", lambda: tree_view(p, TreeOptions(sort_metric=metric), metrics=[metric]))


def grouped(entry: Opened, by: str, metric: str, include: str | None = None, exclude: str | None = None) -> Grouped:
    """``view --by BY`` over the whole profile: every stored metric, sorted by ``metric``."""
    choice("by", by, GROUPINGS)

    def make() -> Grouped:
        from ...analysis.views import filtered

        flat = filtered(simplify(entry.profile, instances=False), include, exclude)
        return group(flat, by, flat.metric_names, sort_metric=metric)

    return entry.get(f"group:{by}:{metric}:{include}:{exclude}", make)


def nodes_by_key(entry: Opened, by: str, metric: str) -> dict[str, list[int]]:
    """Per ``by`` key: the tree nodes whose own frame has that key, heaviest first (for ``tree(node=...)``)."""

    def make() -> dict[str, list[int]]:
        p = tree_profile(entry)
        keys = node_keys(p, by)
        own = own_nodes(p, by)
        incl = np.abs(tree_of(entry, metric).inclusive[metric]) if len(p) else np.zeros(0)
        out: dict[str, list[int]] = {}
        for node in np.flatnonzero(own).tolist():
            key = keys[node]
            if key is not None:
                out.setdefault(key, []).append(node)
        for nodes in out.values():
            nodes.sort(key=lambda n: -float(incl[n]))
        return out

    return entry.get(f"nodes:{by}:{metric}", make)


def line_places(entry: Opened) -> dict[str, tuple[str, int, str]]:
    """Per line key (``"path/file.py:42"``): its file, line and function, from the profile's own frames."""

    def make() -> dict[str, tuple[str, int, str]]:
        out: dict[str, tuple[str, int, str]] = {}
        for f in entry.profile.frames:
            key = KEY_OF["line"](f)
            if key is not None and f.file and key not in out:
                out[key] = (f.file, f.line, f.name)
        return out

    return entry.get("line_places", make)
