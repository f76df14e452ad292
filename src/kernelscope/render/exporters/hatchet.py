"""Hatchet's literal format: what ``hatchet.GraphFrame.from_literal`` reads.

A JSON list of root nodes ``{"frame": {...}, "metrics": {...}, "children": [...]}``;
here one root, ``<root>``. Frames carry ``name`` (``Frame.label()``) and ``type``
(the kernelscope frame kind: ``python``, ``module``, ``op``, ``kernel``, ...), and the
fields kernelscope's importer needs to rebuild the frame exactly (``ks_kind``, ``ks_name``,
``file``, ``line``, ``cls``, ``module``, ``device``, ``stream``; see ``_tree.frame_fields``).

``time_ns`` is written as ``time`` (in nanoseconds), hatchet's default metric, so
``gf.tree()`` works without naming a column; other metrics keep their names.
Every metric is written twice, following hatchet's own convention: ``time`` is the
node's exclusive (self) value and ``time (inc)`` its inclusive value. Hatchet files
names containing ``(inc)`` under ``inc_metrics`` and the rest under ``exc_metrics``, so
``update_inclusive_columns()`` reproduces the inclusive columns. Every node lists every
metric (0 where it has none): hatchet takes the metric list from the root.
"""

from __future__ import annotations

from typing import Any, TextIO

from ...model import Profile
from ._tree import column_names, frame_fields, number, write_literal_tree
from .registry import Exporter, register

NAMES = {"time_ns": "time"}  # hatchet's GraphFrame.tree() shows "time" by default


def dump(profile: Profile, fh: TextIO) -> None:
    metrics = profile.metric_names
    exc = column_names({m: NAMES.get(m, m) for m in metrics})
    columns: list[tuple[str, list[float]]] = []
    for m in metrics:
        columns.append((exc[m], profile.exclusive(m).tolist()))
        columns.append((f"{exc[m]} (inc)", profile.inclusive(m).tolist()))

    def node_json(node: int) -> dict[str, Any]:
        f = profile.frame_of(node)
        label = f.label()
        frame: dict[str, Any] = {"name": label, "type": f.kind.value, **frame_fields(f, label)}
        return {"frame": frame, "metrics": {name: number(col[node]) for name, col in columns}}

    fh.write("[")
    write_literal_tree(fh, profile, node_json)
    fh.write("]\n")


EXPORTER = register(
    Exporter(
        name="hatchet",
        description="hatchet literal (JSON) for hatchet.GraphFrame.from_literal",
        suffix=".hatchet.json",
        dump=dump,
    )
)
