"""Chrome-trace events (Kineto's JSON) into the normalised record stream (attribute.tables)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from ...attribute.records import Kind, host_kind, is_comm_kernel
from ...attribute.tables import EventTables, bounded_int, us_to_ns
from ...model import Frame
from .events import CATEGORIES, RawEvent
from .flops import FLOP_RULES, NO_TRAFFIC, op_bytes, op_flops
from .graphs import CAPTURE_BEGIN, CAPTURE_END, GRAPH_LAUNCHES, KERNEL_LAUNCHES, GraphReplays, graph_ids
from .pyframes import call_stack_frames, python_frame

_LIMIT = 1 << 62
_STACKED = (Kind.OP, Kind.REGION)  # events whose `Call stack` places them
_LAUNCH, _GRAPH, _BEGIN, _END = 1, 2, 3, 4  # runtime calls that CUDA/HIP graph replays are paired by


class ChromeDecoder:
    """Fed batch by batch by the reader; writes rows into ``tables``."""

    def __init__(self, tables: EventTables) -> None:
        self.tables = tables
        # (cat, name) -> (kind, frame-or-name index); -1 index = skip
        self._classes: dict[tuple[Any, Any], tuple[Kind, int]] = {}
        self._bytes_cache: dict[tuple[str, bytes, bytes], int] = {}
        self._stacks: dict[str, int] = {}  # `Call stack` text -> stack label (-1: no user frame in it)
        self.graphs = GraphReplays()
        self._roles: dict[int, int] = {}  # runtime call name -> _LAUNCH, _GRAPH, _BEGIN, _END or 0
        # python_function events seen: they name a function by its def line, not the line that ran (FIELD-NOTES)
        self.def_lines = False

    def _role(self, label: int) -> int:
        hit = self._roles.get(label)
        if hit is None:
            name = self.tables.names[label]
            hit = self._roles[label] = (
                _LAUNCH
                if name in KERNEL_LAUNCHES
                else _GRAPH
                if name in GRAPH_LAUNCHES
                else _BEGIN
                if name in CAPTURE_BEGIN
                else _END
                if name in CAPTURE_END
                else 0
            )
        return hit

    def finish(self) -> dict[str, int]:
        """After the last batch: the graph-replayed kernels held back, written where they belong."""
        return self.graphs.resolve(self.tables)

    def _stack(self, text: str) -> int:
        """The label of an op's ``Call stack`` (its user frames, outermost first); -1 when it has none."""
        hit = self._stacks.get(text)
        if hit is None:
            if len(self._stacks) > 100_000:
                self._stacks.clear()
            frames = call_stack_frames(text)
            hit = self._stacks[text] = self.tables.stack(frames) if frames else -1
        return hit

    def _bytes(self, op: str, dims: Any, types: Any) -> int:
        """Bytes an op reads and writes (-1: no tensor inputs recorded), cached by its raw shapes."""
        if op in NO_TRAFFIC:
            return 0
        if isinstance(dims, msgspec.Raw) and isinstance(types, msgspec.Raw):
            key = (op, bytes(dims), bytes(types))
            hit = self._bytes_cache.get(key)
            if hit is None:
                if len(self._bytes_cache) > 100_000:
                    self._bytes_cache.clear()
                hit = self._bytes_cache[key] = op_bytes(op, dims, types)
            return hit
        return op_bytes(op, dims, types)

    def _classify(self, cat: Any, name: Any) -> tuple[Kind, int]:
        """Kind and interned label of an (X-phase) event; cached per distinct (cat, name)."""
        key = (cat, name)
        try:
            hit = self._classes.get(key)
        except TypeError:  # a list or dict where a string belongs
            return Kind.UNKNOWN, -1
        if hit is not None:
            return hit
        result = self._classify_new(cat, name)
        self._classes[key] = result
        return result

    def _classify_new(self, cat: Any, name: Any) -> tuple[Kind, int]:
        t = self.tables
        if not isinstance(cat, str) or not isinstance(name, str):
            return Kind.UNKNOWN, -1
        base = CATEGORIES.get(cat.lower())
        if base is None:
            return Kind.UNKNOWN, -1
        if base is Kind.PYTHON:
            frame = python_frame(name)
            if frame is None:
                return Kind.SKIP, -1
            kind = Kind.MODULE if name.startswith("nn.Module: ") else Kind.PYTHON
            self.def_lines = self.def_lines or kind is Kind.PYTHON
            return kind, t.frame(frame)
        if base in (Kind.SCOPE, Kind.OP):
            return t.host_label(base, name)
        if base is Kind.RUNTIME:
            return host_kind(base, name), t.name_id(name)
        if base is Kind.KERNEL and is_comm_kernel(name):
            return Kind.COMM, t.name_id(name)
        if base in (Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET):
            return base, t.name_id(name)
        return base, -1

    def _graph_call(self, role: int, thread: int, start: int, dur: int, corr: int, label: int) -> None:
        g = self.graphs
        if role == _LAUNCH:
            if corr >= 0:
                g.launches.extend((thread, start, corr))
        elif role == _GRAPH:  # the launch becomes a region: its kernels are its children
            region = self.tables.frame(Frame.region(self.tables.names[label]))
            self.tables.host.data.extend((thread, start, dur, Kind.REGION, region, -1, -1, -1, -1, 0, -1))
        elif role == _BEGIN:
            g.begins.append((thread, start))
        else:
            g.ends.append((thread, start + dur))

    # --- the hot loop --------------------------------------------------------
    def add(self, events: Iterable[RawEvent]) -> None:
        t = self.tables
        w = t.warnings
        host, device = t.host.data.extend, t.device.data.extend
        classes, classify, thread_of = self._classes, self._classify, t.thread
        bytes_of = self._bytes
        cats = t.categories
        n = 0
        n_dev = len(t.device)
        for ev in events:
            n += 1
            ph = ev.ph
            if ph == "X":
                cat, name = ev.cat, ev.name
                try:
                    hit = classes.get((cat, name))
                except TypeError:
                    hit = (Kind.UNKNOWN, -1)
                kind, label = hit if hit is not None else classify(cat, name)
                if label < 0:
                    if kind is Kind.UNKNOWN:
                        cats[str(cat)[:200]] += 1
                    continue
                ts, du = ev.ts, ev.dur
                if type(ts) is float and type(du) is float and 0.0 <= ts < 4e15 and -4e15 < du < 4e15:
                    start = int(ts * 1000.0 + 0.5)
                    dur = int(du * 1000.0 + (0.5 if du >= 0 else -0.5))
                else:
                    start_, dur_ = us_to_ns(ts), us_to_ns(du)
                    if start_ is None or dur_ is None:
                        w["events with a missing or invalid ts/dur"] += 1
                        continue
                    start, dur = start_, dur_
                if dur < 0:
                    w["negative durations clamped to 0"] += 1
                    dur = 0
                args = ev.args
                if kind >= Kind.KERNEL:  # device event
                    corr = bounded_int(args.correlation) if args is not None else None
                    dev = bounded_int(args.device) if args is not None else None
                    stream = bounded_int(args.stream) if args is not None else None
                    if dev is None:
                        dev = bounded_int(ev.pid)
                    if stream is None:
                        stream = bounded_int(ev.tid)
                    if dev is None or stream is None or not (0 <= dev < 1 << 31):
                        w["device events without device/stream ids"] += 1
                        dev = 0 if dev is None or not (0 <= dev < 1 << 31) else dev
                        stream = 0 if stream is None else stream
                    if corr is None:
                        w["device events without correlation"] += 1
                        corr = -1
                    if (kind is Kind.KERNEL or kind is Kind.COMM) and args is not None and args.collective is not None:
                        kind = Kind.COMM
                        if corr >= 0:  # what the collective recorded, for matching it across ranks
                            cseq, pg = bounded_int(args.comm_seq), args.pg_name
                            t.collectives[corr] = (
                                str(args.collective),
                                "" if pg is None else str(pg),
                                -1 if cseq is None else cseq,
                            )
                    if args is not None and (args.graph_id is not None or args.graph_id_camel is not None):
                        ids = graph_ids(args)
                        if ids is not None:  # a graph replay's kernel: placed once the captures are known
                            self.graphs.hold((start, dur, kind, label, dev, stream, corr, n_dev), *ids)
                            n_dev += 1
                            continue
                    device((start, dur, kind, label, dev, stream, corr, n_dev))
                    n_dev += 1
                    continue
                try:
                    thread = thread_of(ev.pid, ev.tid)
                except TypeError:
                    w["events with unusable pid/tid"] += 1
                    continue
                ext = corr = seq = fwd = nbytes = -1
                value = 0
                if args is not None:
                    ext = bounded_int(args.external_id) or -1
                    if (kind is Kind.PYTHON or kind is Kind.MODULE) and args.calls == 0:
                        value = -1  # (kernelscope's export of a frame with no call of its own)
                    if kind is Kind.RUNTIME or kind is Kind.SYNC:
                        c = bounded_int(args.correlation)
                        corr = -1 if c is None else c
                        role = self._role(label)
                        if role:
                            self._graph_call(role, thread, start, dur, corr, label)
                    elif kind is Kind.OP or kind is Kind.REGION:
                        # (compiled regions too: `CompiledFunction` is the forward of `CompiledFunctionBackward`)
                        s = bounded_int(args.seq)
                        if s is not None and s >= 0:
                            seq = s
                            f = bounded_int(args.fwd_tid)
                            fwd = 0 if f is None else f
                    if kind is Kind.OP:
                        op = t.frames[label].name
                        if op in FLOP_RULES:
                            value = int(op_flops(op, args.input_dims, args.concrete))
                        nbytes = bytes_of(op, args.input_dims, args.input_type)
                        kf = args.kernel_file
                        if type(kf) is str:
                            # a Triton launch from compiled code: context for its kernel, not an op
                            t.triton_files[op] = kf
                            kind = Kind.REGION
                            label = t.frame(Frame.region(op))
                    cs = args.call_stack
                    if (
                        type(cs) is str
                        and kind in _STACKED
                        and not (seq >= 0 and (fwd > 0 or label in t.backward_labels))
                    ):
                        # the op's Python stack (2021-era traces): its user frames, just outside the op (an
                        # autograd op's own stack is the `backward()` call: it goes under its forward op instead)
                        stack = self._stack(cs)
                        if stack >= 0:
                            host((thread, start, dur, Kind.STACK, stack, -1, -1, -1, -1, 0, -1))
                host((thread, start, dur, kind, label, ext, corr, seq, fwd, value, nbytes))
            elif ph == "i" or ph == "I":
                args = ev.args
                if ev.name != "[memory]" or args is None:
                    continue
                nbytes = args.nbytes
                if type(nbytes) is not int and type(nbytes) is not float:
                    w["memory events without Bytes"] += 1
                    continue
                if not 0 < nbytes < _LIMIT:
                    continue
                start_ = us_to_ns(ev.ts)
                if start_ is None:
                    w["events with a missing or invalid ts/dur"] += 1
                    continue
                try:
                    thread = thread_of(ev.pid, ev.tid)
                except TypeError:
                    w["events with unusable pid/tid"] += 1
                    continue
                host((thread, start_, 0, Kind.MEMORY, -1, -1, -1, -1, -1, int(nbytes), -1))
            elif ph is None:
                w["events without ph"] += 1
        t.events_seen += n
        t.host.maybe_spill()
        t.device.maybe_spill()
