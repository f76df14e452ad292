"""CUDA/HIP graph replays in Kineto traces: each replayed kernel back to where its graph was captured.

A ``cudaGraphLaunch``/``hipGraphLaunch`` runs every kernel of a graph; each of those kernels carries the
launch's correlation and, from CUPTI's kernel record, its ``graph id`` and ``graph node id`` (Kineto writes
them as ``"graph id"``/``"graph node id"``; ``graphId``/``graphNodeId`` are read too). Joined by correlation
alone they all land on the one launch (TraceLens users see 97% of GPU time in one ``hipGraphLaunch`` row).

When the trace also holds the capture (``cudaStreamBeginCapture`` … ``cudaStreamEndCapture`` on a thread,
with the kernel launches made while capturing: launches that ran no kernel then), a replayed kernel takes
the correlation of the launch that captured its node, so the device join puts it under the op and line
that captured it. Pairing: the captures in time order with the graph ids in ascending order (CUDA numbers
graphs as they are created), and within a graph its node ids in ascending order with the capture's
launches in time order; a graph whose counts do not match is not paired. Otherwise the kernels stay under
the launch, which becomes a ``cudaGraphLaunch`` region with the kernels as its children. Which of the two
happened is counted in ``metadata["cuda_graphs"]``.
"""

from __future__ import annotations

import array
import bisect
from collections import defaultdict
from typing import Any

from ...attribute.tables import EventTables

GRAPH_LAUNCHES = frozenset({"cudaGraphLaunch", "cudaGraphLaunch_ptsz", "hipGraphLaunch", "cuGraphLaunch"})
CAPTURE_BEGIN = frozenset({"cudaStreamBeginCapture", "cudaStreamBeginCapture_ptsz", "hipStreamBeginCapture"})
CAPTURE_END = frozenset({"cudaStreamEndCapture", "cudaStreamEndCapture_ptsz", "hipStreamEndCapture"})
KERNEL_LAUNCHES = frozenset(
    {
        "cudaLaunchKernel",
        "cudaLaunchKernel_ptsz",
        "cudaLaunchKernelExC",
        "cudaLaunchCooperativeKernel",
        "cuLaunchKernel",
        "cuLaunchKernelEx",
        "hipLaunchKernel",
        "hipExtLaunchKernel",
        "hipModuleLaunchKernel",
        "hipExtModuleLaunchKernel",
        "hipLaunchCooperativeKernel",
    }
)


class GraphReplays:
    """Collects what the pairing needs while the trace streams by; ``resolve`` writes the held kernels."""

    def __init__(self) -> None:
        self.kernels: list[tuple[int, ...]] = []  # device rows of replayed kernels, held back
        self.graph_of: list[tuple[int, int]] = []  # (graph id, node id) of each held kernel
        self.launches = array.array("q")  # (thread, start, correlation) of every kernel launch call
        self.begins: list[tuple[int, int]] = []  # (thread, start) of capture begins
        self.ends: list[tuple[int, int]] = []  # (thread, end) of capture ends

    def hold(self, row: tuple[int, ...], graph: int, node: int) -> None:
        self.kernels.append(row)
        self.graph_of.append((graph, node))

    def resolve(self, tables: EventTables) -> dict[str, int]:
        """Write the held kernels into ``tables.device``, re-correlated where their capture is known."""
        if not self.kernels:
            return {}
        node_corr = self._pair()
        placed = 0
        add = tables.device.data.extend
        for row, key in zip(self.kernels, self.graph_of, strict=True):
            corr = node_corr.get(key)
            if corr is not None:
                row = (*row[:6], corr, *row[7:])
                placed += 1
            add(row)
        tables.device.maybe_spill()
        under_launch = len(self.kernels) - placed
        if under_launch:
            tables.warnings["CUDA/HIP graph kernels left under their graph launch (no capture in the trace)"] += (
                under_launch
            )
        return {"kernels placed where captured": placed, "kernels under their graph launch": under_launch}

    def _pair(self) -> dict[tuple[int, int], int]:
        captures = self._captures()
        nodes: defaultdict[int, set[int]] = defaultdict(set)
        for graph, node in self.graph_of:
            nodes[graph].add(node)
        graphs = sorted(nodes)
        if not captures or len(captures) != len(graphs):
            return {}
        out: dict[tuple[int, int], int] = {}
        for graph, corrs in zip(graphs, captures, strict=True):
            ids = sorted(nodes[graph])
            if len(ids) == len(corrs):
                out.update({(graph, n): c for n, c in zip(ids, corrs, strict=True)})
        return out

    def _captures(self) -> list[list[int]]:
        """The launch correlations of each capture, captures in time order."""
        if not self.begins:
            return []
        by_thread: defaultdict[int, list[tuple[int, int]]] = defaultdict(list)
        lz = self.launches
        for i in range(0, len(lz), 3):
            by_thread[lz[i]].append((lz[i + 1], lz[i + 2]))
        ends: defaultdict[int, list[int]] = defaultdict(list)
        for thread, end in self.ends:
            ends[thread].append(end)
        for v in ends.values():
            v.sort()
        out: list[tuple[int, list[int]]] = []
        for thread, begin in sorted(self.begins, key=lambda b: b[1]):
            after = ends.get(thread, [])
            at = bisect.bisect_left(after, begin)
            if at >= len(after):
                continue  # a capture that does not end in the trace
            end = after[at]
            launches = sorted(by_thread.get(thread, []))
            lo = bisect.bisect_left(launches, (begin, -(1 << 62)))
            hi = bisect.bisect_right(launches, (end, 1 << 62))
            out.append((begin, [c for _s, c in launches[lo:hi]]))
        return [corrs for _b, corrs in sorted(out)]


def graph_ids(args: Any) -> tuple[int, int] | None:
    """(graph id, graph node id) of a kernel's args, when it ran as part of a graph."""
    if args is None:
        return None
    graph = args.graph_id if args.graph_id is not None else args.graph_id_camel
    node = args.graph_node_id if args.graph_node_id is not None else args.graph_node_id_camel
    if type(graph) is int and type(node) is int and graph > 0 and node >= 0:
        return graph, node
    return None
