"""What the engine's steps share: the state of one fold (``FoldState``, the ``Attributor``) and the
``Placer`` that puts compiled kernels under their fused lines.

``nesting.sweep_host`` and ``device_join.join_device`` read and fill a ``FoldState``; ``engine`` holds it and
calls them. So the steps import this module, not the engine that calls them.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, Protocol

from ..model import ProfileBuilder
from .stores import Rows, Tree
from .tables import EventTables


class Placer(Protocol):
    """Places a compiled graph's kernel under the lines it fused (live runs with torch.compile
    provenance; see ``compiled_placer``). ``begin`` is asked for every outermost op of a region
    or backward; it returns the node to attribute the call to, or None (not a compiled kernel)."""

    def begin(self, name: str, backward: bool, ctx: int, builder: ProfileBuilder) -> tuple[int, Any] | None: ...

    def finish(self, token: Any, metrics: dict[str, float], builder: ProfileBuilder) -> None: ...

    def enter_graph(self) -> None: ...


class FoldState(Protocol):
    """The tree, the metric columns and the forward contexts a fold fills (``engine.Attributor``)."""

    tables: EventTables
    warnings: Counter[str]
    tree: Tree
    rows: Rows
    host_timeline: bool  # keep host rows for the timeline (an import)
    placer: Placer | None
    watch: frozenset[int]
    watched: list[tuple[int, int, int, int, int]]
    op_spans: list[tuple[int, int, int, int]] | None  # with native sampling: every op's (node, thread, start, end)
    cpu_time: defaultdict[int, float]
    op_time: defaultdict[int, float]
    count: defaultdict[int, float]
    flops: defaultdict[int, float]
    alloc: defaultdict[int, float]
    nbytes: defaultdict[int, float]
    fwd_seq: dict[int, int]  # sequence number -> forward op node (this fold)
    fwd_prev: dict[int, int]  # ... the fold before (a backward may run a window later)
    fwd_seq_from_bw: set[int]
    device_seen: bool

    def track(self, kind: str, a: Any, b: Any) -> int: ...
