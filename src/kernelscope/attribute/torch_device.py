"""Device activity of a live torch run (Kineto's flat event list) into kernel frames under the op
that launched them (joined by the op's correlation id), and into the timeline."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..model import Frame, ProfileBuilder, TimelineBuilder
from ..model.timeline import LINKED, Category
from .engine import UNLINKED_SCOPE
from .records import is_comm_kernel


def fold_device_events(
    b: ProfileBuilder, timeline: TimelineBuilder, corr_node: Mapping[int, int], events: Iterable[Any]
) -> None:
    unlinked = -1
    for e in events:
        node = corr_node.get(e.linked_correlation_id(), 0)
        if node == 0:  # queued before recording began: the importer's rule and label
            if unlinked < 0:
                unlinked = b.child(0, Frame.scope(UNLINKED_SCOPE))
            node = unlinked
        device = f"cuda:{e.device_index()}"
        stream = int(e.device_resource_id())
        name = e.name()
        kernel = b.child(node, Frame.kernel(name, device, stream))
        dur = float(e.duration_ns())
        b.add(kernel, "time_ns", dur)
        b.add(kernel, "count", 1.0)
        lower = name.lower()
        cat = Category.MEMCPY if "memcpy" in lower else Category.MEMSET if "memset" in lower else Category.KERNEL
        if cat is Category.KERNEL and is_comm_kernel(name):
            cat = Category.COMM
        track = timeline.track(f"stream {stream}", device)
        timeline.add(
            kernel, track, int(e.start_ns()), int(dur), cat, 0 if node == unlinked else LINKED, e.correlation_id()
        )
