"""Native samples -> nodes of the tree: each under the innermost op running on its thread at that instant.

A sample (a segment of py-spy's trace, chrome.py) taken inside an op goes under that op as a ``native``
frame: its innermost resolved native symbol and library, with its layer (layers.py); one outside every op
goes under its innermost user Python line as ``Python / interpreter``, unless kernelscope's own Python code runs
inside that line (its hooks): that is kernelscope's cost, counted apart and placed nowhere (an op that runs under
one of kernelscope's wrappers is the op's). Its time is its segment's (py-spy
samples at a rate: a segment of k equal samples lasts about k intervals), cut at the end of the window.
An op's native children take their time out of the op's own host time (``cpu_time_ns``, and ``time_ns``
on a run without a device), so the op's total is unchanged and its ``self`` is what no sample saw; when
the samples add up to more than that self time (sampling is an estimate) they are scaled down to it.
An op is split only when it has at least ``MIN_SAMPLES`` samples; the time of an op with fewer stays its own.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from ...attribute.userframes import display_path, is_user_file
from ...model import Frame, FrameKind, ProfileBuilder
from .chrome import Segment, StackFrame
from .layers import OTHER, PYTHON, sample_layer

MIN_SAMPLES = 3
_OWN_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep
INTERPRETER = "Python / interpreter"
NO_NATIVE = "[no native frames read]"


@dataclass
class Flat:
    """The innermost op at every instant of the recorded windows (non-overlapping intervals, sorted)."""

    start: npt.NDArray[np.int64]
    end: npt.NDArray[np.int64]
    node: npt.NDArray[np.int64]
    windows: list[tuple[int, int]]


def flatten(spans: Sequence[tuple[int, int, int]], windows: list[tuple[int, int]]) -> Flat:
    """``spans``: (start, end, node) of ops, nested by time (ends clipped to their parent's)."""
    starts: list[int] = []
    ends: list[int] = []
    nodes: list[int] = []

    def emit(a: int, b: int, node: int) -> None:
        if b > a:
            starts.append(a)
            ends.append(b)
            nodes.append(node)

    stack: list[tuple[int, int]] = []
    cur = 0
    for s, e, node in sorted(spans, key=lambda x: (x[0], -x[1])):
        while stack and stack[-1][0] <= s:
            end, top = stack.pop()
            emit(cur, end, top)
            cur = end
        if stack:
            emit(cur, s, stack[-1][1])
            e = min(e, stack[-1][0])
        stack.append((e, node))
        cur = s
    while stack:
        end, top = stack.pop()
        emit(cur, end, top)
        cur = end
    return Flat(
        np.asarray(starts, dtype=np.int64),
        np.asarray(ends, dtype=np.int64),
        np.asarray(nodes, dtype=np.int64),
        sorted(windows),
    )


@dataclass
class Placed:
    """What the samples of one run came to."""

    under_ops: dict[int, dict[Frame, float]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(float)))
    interpreter: dict[int, float] = field(default_factory=lambda: defaultdict(float))
    outside_windows_ns: float = 0.0
    own_ns: float = 0.0  # samples in kernelscope's own Python code (its hooks): its cost, not the program's
    in_ops_ns: float = 0.0
    between_ops_ns: float = 0.0


def native_part(stack: Sequence[StackFrame]) -> list[StackFrame]:
    """The native frames below the innermost Python frame."""
    last = -1
    for i, f in enumerate(stack):
        if f.python:
            last = i
    return [f for f in stack[last + 1 :] if not f.python]


def leaf_frame(native: Sequence[StackFrame]) -> Frame:
    layer = sample_layer([(f.name, f.file) for f in native])
    for f in reversed(native):
        if not f.name.startswith("0x"):
            return Frame.native(f.name, os.path.basename(f.file), layer)
    if native:
        return Frame.native("[unresolved]", os.path.basename(native[-1].file), layer)
    return Frame.native(NO_NATIVE, "", OTHER)  # inside an op py-spy read no native frame: not the interpreter


def place(segments: Sequence[Segment], flat: Flat, offset_ns: int, builder: ProfileBuilder) -> Placed:
    """Each segment (one thread's) under the op or line running at its start."""
    out = Placed()
    wins = flat.windows
    w_start = np.asarray([w[0] for w in wins], dtype=np.int64)
    for seg in segments:
        t = seg.start_us * 1000 + offset_ns
        wi = int(np.searchsorted(w_start, t, side="right")) - 1
        dur = (seg.end_us - seg.start_us) * 1000
        if wi < 0 or t >= wins[wi][1]:
            out.outside_windows_ns += dur
            continue
        dur = min(seg.end_us * 1000 + offset_ns, wins[wi][1]) - t
        i = int(np.searchsorted(flat.start, t, side="right")) - 1
        if i >= 0 and t < flat.end[i]:  # (an op called through kernelscope's wrappers is still the op)
            out.under_ops[int(flat.node[i])][leaf_frame(native_part(seg.stack))] += dur
            out.in_ops_ns += dur
            continue
        if _in_own_hooks(seg.stack):
            out.own_ns += dur
            continue
        node = _line_node(seg.stack, flat, i, builder)
        out.interpreter[node] += dur
        out.between_ops_ns += dur
    return out


def _in_own_hooks(stack: Sequence[StackFrame]) -> bool:
    """Is kernelscope's own Python code running inside the program's innermost frame (one of its hooks)?"""
    user = max((i for i, f in enumerate(stack) if f.python and is_user_file(f.file)), default=-1)
    return any(f.python and f.file.startswith(_OWN_DIR) for f in stack[user + 1 :])


def _line_node(stack: Sequence[StackFrame], flat: Flat, i: int, builder: ProfileBuilder) -> int:
    """The node of the sample's innermost user line: found above the op before or after it, else new."""
    frame = None
    for f in reversed(stack):
        if f.python and is_user_file(f.file):
            frame = Frame.python(display_path(f.file), f.line, f.name)
            break
    if frame is None:
        return 0
    for j in (i, i + 1):
        if 0 <= j < len(flat.node):
            node = int(flat.node[j])
            while node > 0:
                if builder.frame_of(node) == frame:
                    return node
                node = builder.parent_of(node)
    return builder.child(0, frame)


@dataclass(frozen=True)
class Applied:
    split_ops: int
    thin_ops: int  # ops with samples below MIN_SAMPLES (left unsplit)
    native_ns: float


def apply(placed: Placed, builder: ProfileBuilder, rate: int, device_run: bool) -> Applied:
    """Add the placed samples to the tree (see the module's docstring)."""
    cpu = builder.metric_values("cpu_time_ns")
    split = thin = 0
    total = 0.0
    interval = 1e9 / rate
    for node, frames in placed.under_ops.items():
        sampled = sum(frames.values())
        if sampled / interval < MIN_SAMPLES:
            thin += 1
            continue
        own = cpu.get(node, 0.0)
        scale = min(1.0, own / sampled) if sampled > 0 else 0.0
        if scale <= 0:
            thin += 1
            continue
        split += 1
        for frame, ns in sorted(frames.items(), key=lambda kv: -kv[1]):
            value = ns * scale
            child = builder.child(node, frame)
            builder.add(child, "cpu_time_ns", value)
            builder.add(node, "cpu_time_ns", -value)
            if not device_run:
                builder.add(child, "time_ns", value)
                builder.add(node, "time_ns", -value)
            total += value
    for node, ns in placed.interpreter.items():
        child = builder.child(node, Frame.native(INTERPRETER, "", PYTHON))
        builder.add(child, "cpu_time_ns", ns)
        total += ns
    return Applied(split, thin, total)


def is_native(frame: Frame) -> bool:
    return frame.kind is FrameKind.NATIVE
