"""Bridges the engine (attribute.engine, live runs) and torch.compile provenance: an Inductor kernel met in the event tree
is placed under the lines and modules of the FX nodes it fused (build.compiled), not under the
generated wrapper."""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..model import Frame, FrameKind, ProfileBuilder
from .compiled import place_compiled_kernel

REGION_PREFIX = "Torch-Compiled Region: "


class CapturePlacer:
    def __init__(self, capture: Any) -> None:
        self.capture = capture
        self.calls: Counter[tuple[str, bool]] = Counter()

    def enter_graph(self) -> None:
        self.calls.clear()

    def begin(self, name: str, backward: bool, ctx: int, builder: ProfileBuilder) -> tuple[int, Any] | None:
        """The node of a compiled kernel (under the lines it fused, from ``ctx``), and a token for
        ``finish``; None for an eager op."""
        in_region, compile_id = _region_of(builder, ctx)
        if not (in_region or backward or name.startswith("graph_")):
            return None  # eager op: not ours
        key = (name, backward)
        origins = self.capture.origins(name, backward, self.calls[key], compile_id=compile_id)
        if origins is None:
            return None
        self.calls[key] += 1
        # an extern call (aten::mm from the graph's wrapper) stays an op; a generated kernel is a kernel
        kernel = Frame.op(name) if "::" in name else Frame.kernel(name, "cpu")
        path = next(iter(place_compiled_kernel(kernel, origins, {})))[0]
        node = builder.path(path[: path.index(kernel) + 1], start=ctx)
        return node, (kernel, origins, ctx)

    def finish(self, token: Any, metrics: dict[str, float], builder: ProfileBuilder) -> None:
        """Add the kernel's measured metrics: on the kernel, split over its parts when it fused several lines."""
        kernel, origins, ctx = token
        for path, values in place_compiled_kernel(kernel, origins, metrics):
            at = path.index(kernel) + 1
            node = builder.path(path[:at], start=ctx)
            builder.add_many(builder.path(path[at:], start=node), values)


def _region_of(builder: ProfileBuilder, node: int) -> tuple[bool, str | None]:
    """Whether ``node`` is inside a compiled region, and the region's frame/compile id ("0/1")."""
    inside = False
    while node > 0:
        f = builder.frame_of(node)
        if f.kind is FrameKind.REGION:
            inside = True
            if f.name.startswith(REGION_PREFIX):
                return True, f.name[len(REGION_PREFIX) :]
        node = builder.parent_of(node)
    return inside, None
