"""A live torch session's windows, folded through the one engine into one tree.

``WindowFolder`` owns the record tables, the engine (``attribute.engine.Attributor``, which keeps the
tree, the metrics and the forward contexts between windows) and the converter of torch's events
(``torch_events``). After each window it attaches what the records do not carry: the metrics a program
passed to its scopes, and the dtypes of each cast by the line that asked for it.
"""

from __future__ import annotations

import collections
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from ..attribute.engine import Attributor
from ..attribute.fold_state import Placer
from ..attribute.tables import EventTables
from ..model import Frame, FrameKind, Profile, ProfileBuilder
from ..model.timeline import Category
from .continued import Chain, Split
from .threads import ThreadWatch
from .torch_events import TorchEvents, casts_by_line
from .torch_meta import is_device_event

# The collectives a process group runs, as the dispatcher records them on the calling thread (c10d ops; the
# functional collectives torch.compile and DTensor use): each call becomes a timeline row on the ``collectives``
# track, so that `kernelscope ranks` matches them across the ranks of a live job. Point-to-point ops pair two
# ranks, not the group: left out.
_COLLECTIVE_PREFIXES = ("c10d::", "_c10d_functional::", "c10d_functional::")
_NOT_COLLECTIVES = frozenset({"send", "recv_", "recv_any_source_", "wait_tensor", "wait"})
COLLECTIVES_TRACK = "collectives"
_LAUNCH_IN_TRACE = 1  # timeline flag: the call is in the trace


def is_collective_op(name: str) -> bool:
    prefix = next((p for p in _COLLECTIVE_PREFIXES if name.startswith(p)), None)
    return prefix is not None and name[len(prefix) :] not in _NOT_COLLECTIVES


class WindowFolder:
    def __init__(
        self,
        module_path: Callable[[int], tuple[str, str] | None],
        scope_metrics: Mapping[str, deque[dict[str, float]]],
    ) -> None:
        self.warnings: collections.Counter[str] = collections.Counter()
        self.tables = EventTables(self.warnings)
        self.engine = Attributor(self.tables, self.warnings, host_timeline=False)
        self.events = TorchEvents(self.tables, module_path)
        self.scope_metrics = scope_metrics
        # dtype conversions by (file, line, from, to): the dtype round-trip rule reads them
        self.casts: collections.Counter[tuple[str, int, str, str]] = collections.Counter()
        self._collectives: set[int] = set()  # labels of collective ops seen so far
        self._frames_seen = 0
        self.native: Any = None  # native.NativeSampling, with run --native: each window's op intervals go to it
        self.threads: ThreadWatch | None = None  # the program's threads (the recorder's), for ops with no caller

    @property
    def builder(self) -> ProfileBuilder:
        """The tree, complete between windows."""
        return self.engine.tree.b

    @property
    def device_run(self) -> bool:
        return self.engine.device_seen

    def set_placer(self, placer: Placer) -> None:
        self.engine.placer = placer

    def fold(
        self,
        results: Any,
        *,
        shapes: bool,
        cuda: bool,
        compile_capture: Any,
        notes: list[str],
        compiling: tuple[tuple[int, int], ...] = (),
        continued: Chain = (),
        split: Split | None = None,
    ) -> int:
        """One window (``prof.kineto_results``) into the tree; returns the events read. ``compiling``: spans
        (ns) in which torch.compile compiled inside the window: their ops are compile work, left out."""
        roots = results.experimental_event_tree()
        conv = self.events
        conv.regions = 0
        fns = self.threads.where(results, roots) if self.threads is not None else None  # (collect/threads.py)
        events = conv.add(
            roots,
            shapes=shapes,
            cuda=cuda,
            compiling=compiling,
            continued=continued,
            split=split,
            thread_functions=fns,
        )
        if compile_capture is not None and conv.regions:
            try:
                compile_capture.observe_events(roots)
            except Exception as exc:  # private torch data: degrade to a warning, never lose the profile
                notes.append(f"compiled-region timing skipped ({type(exc).__name__}: {exc})")
        del roots
        if cuda:  # device kernels come from Kineto's flat event list
            conv.add_device(e for e in results.events() if is_device_event(e))
        engine = self.engine
        engine.watch = self._watch_labels()
        if self.native is not None:
            engine.op_spans = []
        engine.fold()
        if engine.op_spans is not None:
            self.native.window(engine.op_spans)
            engine.op_spans = None
        engine.flush()
        self._attach_watched()
        return events

    def build(self, metadata: dict[str, Any], notes: list[str]) -> Profile:
        """The profile (the tables' spilled files are removed). ``notes`` gets the fold's warnings."""
        if self.casts:
            metadata["casts"] = [
                {"file": f, "line": ln, "from": a, "to": b, "calls": n}
                for (f, ln, a, b), n in sorted(self.casts.items())
            ]
        notes.extend(f"{what}: {n}" for what, n in sorted(self.warnings.items()))
        self.warnings.clear()
        metadata["warnings"] = list(notes)
        try:
            return self.engine.build(metadata)
        finally:
            self.tables.close()

    def _watch_labels(self) -> frozenset[int]:
        """The frames whose nodes the engine reports: casts, and scopes the program passed metrics for."""
        frames = self.tables.frames
        for label in range(self._frames_seen, len(frames)):
            f = frames[label]
            if f.kind is FrameKind.OP and is_collective_op(f.name):
                self._collectives.add(label)
        self._frames_seen = len(frames)
        labels = {self.events.cast_label, *self._collectives}
        for name, queue in self.scope_metrics.items():
            if queue:
                labels.add(self.tables.frame(Frame.scope(name)))
        return frozenset(labels)

    def _attach_watched(self) -> None:
        engine = self.engine
        watched = sorted(engine.watched, key=lambda w: (w[3], w[2]))  # in time order
        engine.watched.clear()
        b = self.builder
        cast_label = self.events.cast_label
        casts = [w for w in watched if w[0] == cast_label]
        if casts and self.events.casts:
            casts_by_line(casts, self.events.casts, self._line_of, self.casts)
        self.events.casts.clear()
        rows = []
        for label, node, _thread, start, end in watched:
            if label == cast_label:
                continue
            if label in self._collectives:
                track = engine.named_track(COLLECTIVES_TRACK, "cpu")
                rows.append((node, track, start, end - start, int(Category.COMM), _LAUNCH_IN_TRACE, -1))
                continue
            queue = self.scope_metrics.get(self.tables.frames[label].name)
            if queue:
                b.add_many(node, queue.popleft())
        engine.add_rows(rows)

    def _line_of(self, node: int) -> tuple[str, int] | None:
        b = self.builder
        while node > 0:
            frame = b.frame_of(node)
            if frame.kind is FrameKind.PYTHON:
                return frame.file, frame.line
            node = b.parent_of(node)
        return None
