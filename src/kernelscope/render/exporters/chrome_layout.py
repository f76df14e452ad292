"""A profile without a timeline (a live run, a Proton import, a merged profile) laid out as trace events
whose re-import gives back the profile's totals: ``cpu_time_ns``, ``time_ns`` and ``count`` to the
nanosecond and the call.

Every frame that runs on the host becomes as many events as it has calls (``count``; at least one), whose
durations add up to its inclusive host time (``cpu_time_ns``, or ``time_ns`` in a profile without host
time). The durations of one frame's calls are built bottom up: each call holds its share of its children's
calls (a child's calls are dealt out over its parent's calls in order) and a share of the frame's own time.
The calls are then placed top down, in whole nanoseconds: each call starts with its own time, followed by its
children's calls one after another, so a child's events always lie inside its parent's and a reader that
nests events by time (kernelscope's importer, Perfetto) finds the same self time on every frame. A call of no
length (a frame recorded with no time of its own) and each launch of a device kernel sit at their parent
call's first nanosecond, which is kept as the parent's own time whenever it has any.

Device kernels (not those of a CPU run, which are host work) get one event per call on their stream, joined by
``correlation`` to a zero-length launch on the host. ``[backward]`` frames are no event of their own (a trace
marks backward ops by sequence numbers, which an aggregated profile does not have): their ops sit directly
under the forward context above them. Estimated ``part`` frames stay inside their kernel's events.

Bounds: metric values are rounded to whole nanoseconds; a frame recorded with no call of its own (a frame
running on from before a live window opened) becomes one call.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ...model import FrameKind, Profile

IntArray = npt.NDArray[np.int64]

_TRANSPARENT = frozenset({FrameKind.ROOT, FrameKind.BACKWARD})


@dataclass(frozen=True)
class Layout:
    """Host events (node, start, duration) and device events (node, start, duration, host launch time),
    in nanoseconds; ``host_depth`` orders events that start together and last as long (outer first)."""

    host_node: IntArray
    host_start: IntArray
    host_dur: IntArray
    host_depth: IntArray
    device_node: IntArray
    device_start: IntArray
    device_dur: IntArray
    device_launch: IntArray


def is_device_kernel(profile: Profile, node: int) -> bool:
    """A kernel that ran on an accelerator (a CPU run's compiled kernels are host work)."""
    frame = profile.frame_of(node)
    return frame.kind is FrameKind.KERNEL and not frame.device.lower().startswith("cpu")


def _ns(values: npt.NDArray[np.float64]) -> IntArray:
    return np.rint(np.clip(values, 0.0, None)).astype(np.int64)


def _deal(calls: int, over: int) -> IntArray:
    """Which of ``over`` parent calls each of ``calls`` child calls falls in (in order, spread evenly)."""
    return (np.arange(calls, dtype=np.int64) * over) // calls


def _split(total: int, n: int, first: npt.NDArray[np.bool_] | None = None) -> IntArray:
    """``total`` ns in ``n`` whole pieces; the calls marked ``first`` get a nanosecond before the rest."""
    out = np.zeros(n, dtype=np.int64)
    if total <= 0:
        return out
    if first is not None and first.any():
        marked = np.flatnonzero(first)[:total]
        out[marked] = 1
        total -= len(marked)
    base, rest = divmod(total, n)
    out += base
    out[:rest] += 1
    return out


class _Tree:
    """Which nodes are host events, device events or neither, and their host parents."""

    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        n = len(profile)
        cpu = _ns(profile.exclusive("cpu_time_ns"))
        time = _ns(profile.exclusive("time_ns"))
        width_metric = cpu if cpu.any() else time
        self.width = _inclusive(profile, width_metric)
        self.device_time = _inclusive(profile, time)
        counts = np.rint(np.clip(profile.exclusive("count"), 0.0, None)).astype(np.int64)
        self.calls = np.maximum(counts, 1)
        self.host_kids: list[list[int]] = [[] for _ in range(n)]
        self.device_kids: list[list[int]] = [[] for _ in range(n)]
        self.host: list[int] = []
        host_parent = np.full(n, -1, dtype=np.int64)  # the node whose events hold this one's (-1: none)
        skipped = np.zeros(n, dtype=bool)  # under a device kernel, or an estimated part
        parent = profile.parent.tolist()
        for node in range(1, n):
            par = parent[node]
            kind = profile.frame_of(node).kind
            if skipped[par] or kind is FrameKind.PART:
                skipped[node] = True
                continue
            holder = int(host_parent[par]) if profile.frame_of(par).kind in _TRANSPARENT else par
            if is_device_kernel(profile, node):
                skipped[node] = True  # (its parts are inside its own events)
                self.device_kids[max(holder, 0)].append(node)
            elif kind in _TRANSPARENT:
                host_parent[node] = holder
            else:
                host_parent[node] = node
                self.host_kids[max(holder, 0)].append(node)
                self.host.append(node)


def _inclusive(profile: Profile, values: IntArray) -> IntArray:
    out = values.copy()
    parent = profile.parent
    for node in range(len(profile) - 1, 0, -1):
        out[parent[node]] += out[node]
    return out


def lay_out(profile: Profile) -> Layout:
    tree = _Tree(profile)
    calls: dict[int, IntArray] = {}  # a host node's calls: their durations
    own: dict[int, IntArray] = {}  # ... and the part of each that is the node's own time
    for node in reversed(tree.host):  # children before parents
        n = int(tree.calls[node])
        width = np.zeros(n, dtype=np.int64)
        needs_point = np.zeros(n, dtype=bool)
        for kid in tree.host_kids[node]:
            dealt = _deal(len(calls[kid]), n)
            width += np.bincount(dealt, weights=calls[kid], minlength=n).astype(np.int64)
            needs_point[dealt[calls[kid] == 0]] = True
        for kid in tree.device_kids[node]:
            needs_point[_deal(int(tree.calls[kid]), n)] = True
        own[node] = _split(int(tree.width[node]) - int(width.sum()), n, needs_point)
        calls[node] = width + own[node]

    starts: dict[int, IntArray] = {}
    cursor = 0
    for kid in tree.host_kids[0]:  # outermost frames one after another, a nanosecond apart
        w = calls[kid]
        starts[kid] = cursor + np.cumsum(w) - w + np.arange(len(w))
        cursor = int(starts[kid][-1] + w[-1]) + 1
    host_parts: list[tuple[int, IntArray, IntArray]] = []
    launches: list[tuple[int, IntArray]] = []
    for kid in tree.device_kids[0]:
        launches.append((kid, np.full(int(tree.calls[kid]), cursor, dtype=np.int64)))
    for node in tree.host:  # parents before children
        start = starts.pop(node)
        host_parts.append((node, start, calls[node]))
        n = len(start)
        fill = start + own[node]
        for kid in tree.host_kids[node]:
            w = calls[kid]
            dealt = _deal(len(w), n)
            before = np.cumsum(w) - w  # the kid's earlier calls, over all parent calls
            group_first = np.searchsorted(dealt, dealt)  # each call's first sibling in the same parent call
            at = fill[dealt] + before - before[group_first]
            zero = w == 0
            at[zero] = start[dealt[zero]]
            starts[kid] = at
            fill = fill + np.bincount(dealt, weights=w, minlength=n).astype(np.int64)
        for kid in tree.device_kids[node]:
            launches.append((kid, start[_deal(int(tree.calls[kid]), n)]))
    return _layout(profile, tree, host_parts, launches)


def _layout(
    profile: Profile,
    tree: _Tree,
    host_parts: list[tuple[int, IntArray, IntArray]],
    launches: list[tuple[int, IntArray]],
) -> Layout:
    empty = np.zeros(0, dtype=np.int64)
    depth = profile.depth
    h_node = np.concatenate([np.full(len(s), nd, dtype=np.int64) for nd, s, _ in host_parts] or [empty])
    h_start = np.concatenate([s for _, s, _ in host_parts] or [empty])
    h_dur = np.concatenate([d for _, _, d in host_parts] or [empty])
    d_node = np.concatenate([np.full(len(at), nd, dtype=np.int64) for nd, at in launches] or [empty])
    d_launch = np.concatenate([at for _, at in launches] or [empty])
    d_dur = np.concatenate([_split(int(tree.device_time[nd]), len(at)) for nd, at in launches] or [empty])
    # each stream runs its kernels one after another, none before its launch
    d_start = np.zeros(len(d_node), dtype=np.int64)
    streams: dict[tuple[str, int], int] = {}
    order = np.lexsort((d_node, d_launch))
    nodes, launch, dur = d_node.tolist(), d_launch.tolist(), d_dur.tolist()
    for i in order.tolist():
        frame = profile.frame_of(nodes[i])
        key = (frame.device, frame.stream)
        at = max(streams.get(key, 0), launch[i])
        d_start[i] = at
        streams[key] = at + dur[i]
    return Layout(
        host_node=h_node,
        host_start=h_start,
        host_dur=h_dur,
        host_depth=depth[h_node].astype(np.int64),
        device_node=d_node,
        device_start=d_start,
        device_dur=d_dur,
        device_launch=d_launch,
    )
