"""Helpers shared by the hatchet-literal exporters (proton, hatchet).

The literal is a nested JSON tree. ``json.dumps`` recurses once per nesting level
and raises RecursionError around depth 1,000, so the tree is written here with an
explicit stack: only each node's own ``frame`` and ``metrics`` go through ``json``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from ...model import Frame, FrameKind, Profile

# Keys hatchet's literal reader puts next to the metrics in its dataframe: a metric
# with one of these names would overwrite them.
_RESERVED = frozenset({"name", "node", "type"})


def number(value: float) -> int | float:
    """A JSON number: integral values as ints (Proton writes durations and counts as integers)."""
    if not math.isfinite(value):
        raise ValueError(f"non-finite metric value {value!r}")
    return int(value) if value.is_integer() else value


def distinct_labels(profile: Profile) -> list[str]:
    """``Frame.label()`` per frame, a kernel's followed by `` [device stream N]`` when another kernel
    frame has the same name on another device or stream (so flame graphs keep them apart)."""
    labels = [f.label() for f in profile.frames]
    places: dict[str, set[tuple[str, int]]] = {}
    for f in profile.frames:
        if f.kind is FrameKind.KERNEL:
            places.setdefault(f.name, set()).add((f.device, f.stream))
    for i, f in enumerate(profile.frames):
        if f.kind is FrameKind.KERNEL and len(places[f.name]) > 1:
            where = " ".join(x for x in (f.device, f"stream {f.stream}" if f.stream >= 0 else "") if x)
            labels[i] = f"{labels[i]} [{where or 'no device'}]"
    return labels


def frame_fields(frame: Frame, shown_name: str) -> dict[str, Any]:
    """The keys that let kernelscope's importer rebuild ``frame`` exactly from a literal frame.

    ``ks_kind`` is the kind; ``ks_name`` the frame's own name when the shown ``name`` differs;
    then each field that is not at its default (``file``, ``line``, ``cls``, ``module``, ``device``,
    ``stream``). Hatchet keeps extra frame keys as columns; Proton's viewer ignores them.
    """
    out: dict[str, Any] = {"ks_kind": frame.kind.value}
    if frame.kind is not FrameKind.ROOT and frame.name != shown_name:
        out["ks_name"] = frame.name
    for key, value in frame.to_json().items():
        if key not in ("kind", "name"):
            out[key] = value
    return out


def column_names(wanted: dict[str, str]) -> dict[str, str]:
    """Map metric -> output column, keeping the wanted names unique and clear of hatchet's own keys.

    ``(inc)`` anywhere in a name makes hatchet treat the column as inclusive, so it is defused.
    """
    out: dict[str, str] = {}
    taken: set[str] = set()
    for metric, name in wanted.items():
        name = name.replace("(inc)", "(inc.)")
        if name in _RESERVED:
            name = f"{name}_"
        base, n = name, 2
        while name in taken:
            name, n = f"{base}_{n}", n + 1
        taken.add(name)
        out[metric] = name
    return out


def write_literal_tree(fh: TextIO, profile: Profile, node_json: Callable[[int], dict[str, Any]]) -> None:
    """Write the tree under node 0 as one literal node ``{..., "children": [...]}``.

    ``node_json(node)`` gives every key of a node but ``children``; it is written first,
    then the children, pre-order, without recursion.
    """
    kids = profile.children

    def head(node: int) -> str:
        body = json.dumps(node_json(node), allow_nan=False, separators=(",", ":"))
        return body[:-1] + (',"children":[' if body != "{}" else '"children":[')

    fh.write(head(0))
    # (iterator over the children still to write, whether one was written already)
    stack: list[tuple[Iterator[int], list[bool]]] = [(iter(kids[0]), [False])]
    while stack:
        it, started = stack[-1]
        child = next(it, None)
        if child is None:
            fh.write("]}")
            stack.pop()
            continue
        if started[0]:
            fh.write(",")
        started[0] = True
        fh.write(head(child))
        stack.append((iter(kids[child]), [False]))
