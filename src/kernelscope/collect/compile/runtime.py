"""Compiled-vs-eager runtime accounting: steady-state time inside compiled graphs and around them.

Pure: reads a profiler event tree (duck-typed ``name``, ``children``, ``duration_time_ns``,
``tag``) and returns totals; :meth:`.capture.CompileCapture.observe_events` accumulates them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

_ENTRY_PREFIXES = ("nn.Module: OptimizedModule",)
_REGION = "Torch-Compiled Region"
_GRAPH_CALL = "## Call CompiledFxGraph"


def compiled_runtime(roots: Iterable[Any]) -> dict[str, float]:
    """Time inside compiled graphs and around them, from an event tree (duck-typed).

    ``entry_ns``: time inside torch.compile'd callables (``OptimizedModule`` calls, or top-level
    ``Torch-Compiled Region`` events when the Python tracer was off), forward only;
    ``graph_ns``: time inside ``## Call CompiledFxGraph`` (forward and backward), of which
    ``backward_graph_ns`` in backward; ``eager_island_ns``: framework ops inside an entry but
    outside every region (what graph breaks leave to eager mode); ``backward_ns``: time inside
    compiled backward calls (``CompiledFunctionBackward``); ``entries``: how many calls.
    """
    totals = dict.fromkeys(
        ("entry_ns", "graph_ns", "backward_graph_ns", "eager_island_ns", "backward_ns", "entries"), 0.0
    )
    # (event, inside an entry, inside a region, inside a compiled backward)
    stack: list[tuple[Any, bool, bool, bool]] = [(r, False, False, False) for r in roots]
    while stack:
        ev, in_entry, in_region, in_bwd = stack.pop()
        try:
            name = str(getattr(ev, "name", ""))
        except UnicodeDecodeError:  # torch 2.13: names of Python frames freed while profiling
            name = ""
        dur = float(getattr(ev, "duration_time_ns", 0) or 0)
        tag = getattr(getattr(ev, "tag", None), "name", "TorchOp")
        children = list(getattr(ev, "children", ()) or ())
        if name.startswith(_GRAPH_CALL):
            totals["graph_ns"] += dur
            if in_bwd:
                totals["backward_graph_ns"] += dur
            continue
        if name == "CompiledFunctionBackward" and not in_bwd:
            totals["backward_ns"] += dur
            stack.extend((c, in_entry, True, True) for c in children)
            continue
        is_entry = name.startswith(_ENTRY_PREFIXES) or (name.startswith(_REGION) and not in_entry)
        if is_entry and not in_entry:
            totals["entry_ns"] += dur
            totals["entries"] += 1
            in_entry = True
        if name.startswith(_REGION):
            in_region = True
        elif in_entry and not in_region and tag == "TorchOp":
            # an eager op between regions: its own time counts (not its children's again)
            totals["eager_island_ns"] += dur
            continue
        stack.extend((c, in_entry, in_region, in_bwd) for c in children)
    return totals
