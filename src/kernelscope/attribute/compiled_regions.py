"""Compiled regions in the user's terms (used by ``structure``): a ``Torch-Compiled Region: F/C`` frame named
after what the program passed to ``torch.compile``, located at the line it did so (``metadata["compile"]``,
recorded by collect/compile/sites.py), or on an imported trace named after the module and function inside it
(the same name: ``MLP.forward``; no location); which compiled
frames ran no graph; and the calls of the modules inside compiled code. Pure."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..model import Frame, FrameKind, Profile

COMPILED = "torch.compile"  # the ``cls`` of a region named after the compiled callable


def compiled_module_calls(profile: Profile) -> Profile:
    """Modules inside a compiled region ran once per call of the region (torch records no module calls inside
    compiled code; the graph runs each module it traced once per call): a module row there that holds forward
    work gets the region's calls. A module row that holds only gradients (``[backward]`` below it) stays blank."""
    if "count" not in profile.metrics:
        return profile
    n = len(profile)
    frames = profile.frames
    fr = profile.frame.tolist()
    par = profile.parent.tolist()
    count = profile.metrics["count"]
    region_of = [-1] * n  # the innermost named compiled region above each node
    forward_work = np.zeros(n, dtype=bool)  # an op or kernel below the node, not under [backward]
    for node in range(1, n):
        f = frames[fr[node]]
        p = par[node]
        region_of[node] = node if f.kind is FrameKind.REGION and f.cls == COMPILED else region_of[p]
    for node in range(n - 1, 0, -1):
        f = frames[fr[node]]
        if f.kind in (FrameKind.OP, FrameKind.KERNEL):
            forward_work[node] = True
        if forward_work[node] and f.kind is not FrameKind.BACKWARD:
            forward_work[par[node]] = True
    fill = [
        node
        for node in range(1, n)
        if frames[fr[node]].kind is FrameKind.MODULE
        and region_of[node] >= 0
        and count[node] == 0
        and forward_work[node]
    ]
    if not fill:
        return profile
    col = count.copy()
    for node in fill:
        col[node] = count[region_of[node]]
    return profile.replace(metrics={**profile.metrics, "count": col})


def compile_sites(metadata: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Compile id ("0/1") -> what the program passed to ``torch.compile`` and where (live runs record it)."""
    comp = metadata.get("compile")
    if not isinstance(comp, dict):
        return {}
    by_code: dict[tuple[str, int], dict[str, Any]] = {}
    for c in comp.get("callables") or []:
        if isinstance(c, dict):
            by_code[(str(c.get("def_file", "")), int(c.get("def_line") or 0))] = c
    out: dict[str, dict[str, Any]] = {}
    for c in comp.get("compiles") or []:
        if isinstance(c, dict) and c.get("compile_id"):
            site = by_code.get((str(c.get("file", "")), int(c.get("line") or 0)))
            if site is not None:
                out[str(c["compile_id"])] = site
    return out


def empty_compiles(metadata: dict[str, Any]) -> frozenset[str]:
    """Compile ids of frames Dynamo compiled to no graph (``graph_ops`` 0): their regions only run guards."""
    comp = metadata.get("compile")
    if not isinstance(comp, dict):
        return frozenset()
    return frozenset(
        str(c["compile_id"])
        for c in comp.get("compiles") or []
        if isinstance(c, dict) and c.get("compile_id") and c.get("graph_ops") == 0
    )


def named_region(f: Frame, profile: Profile, node: int, callables: dict[str, dict[str, Any]]) -> Frame:
    """A ``Torch-Compiled Region: F/C`` frame named after what was compiled (see the module docstring)."""
    site = callables.get(f.ids)
    if site is not None:
        return Frame(
            FrameKind.REGION,
            str(site.get("name", "")),
            file=str(site.get("file", "")),
            line=int(site.get("line") or 0),
            cls=COMPILED,
            ids=f.ids,
        )
    # (no torch.compile line to give: the compiled function's def line would read as one)
    return Frame(FrameKind.REGION, compiled_code_below(profile, node), cls=COMPILED, ids=f.ids)


def compiled_code_below(profile: Profile, node: int) -> str:
    """Without the run's record of ``torch.compile`` calls (an imported trace): the compiled function is the
    first Python frame inside the region, named with the module it runs in."""
    module = ""
    for anc in profile.ancestors(int(profile.parent[node])):
        g = profile.frame_of(anc)
        if g.kind is FrameKind.MODULE:
            module = g.cls
            break
        if g.kind is FrameKind.PYTHON:
            break
    stack = list(profile.children[node])
    while stack:
        c = stack.pop(0)
        g = profile.frame_of(c)
        if g.kind is FrameKind.PYTHON:
            return f"{module}.{g.name}" if module else g.name
        if g.kind is FrameKind.REGION:
            stack.extend(profile.children[c])
    return module
