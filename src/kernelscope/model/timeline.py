"""The optional columnar timeline: one row per interval, for analyses that need time order."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt


class Category(enum.IntEnum):
    KERNEL = 0
    MEMCPY = 1
    MEMSET = 2
    COMM = 3  # communication kernel (NCCL/RCCL collectives, send/recv)
    RUNTIME = 4  # cudaLaunchKernel, hipMemcpyAsync, ...
    OP = 5  # framework op on the host
    SYNC = 6  # host-device synchronisation call
    FRAME = 7  # a context on the host that is no op: a user line, module, scope, step or compiled region


# Row flags.
LINKED = 1  # device event whose launching runtime call is in the trace


@dataclass(frozen=True, slots=True)
class Track:
    """A thread (host) or a stream (device)."""

    name: str  # "thread 1234", "stream 7"
    device: str  # "cpu", "cuda:0", "rank0/cuda:0"
    kind: str = "stream"  # "thread" | "stream"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "device": self.device, "kind": self.kind}

    @staticmethod
    def from_json(data: dict[str, Any]) -> Track:
        return Track(str(data["name"]), str(data["device"]), str(data.get("kind", "stream")))


COLUMNS: dict[str, type] = {
    "node": np.int32,
    "track": np.int32,
    "start_ns": np.int64,
    "dur_ns": np.int64,
    "category": np.int8,
    "flags": np.uint8,
    "correlation": np.int64,
}


@dataclass(frozen=True)
class Timeline:
    """Columns of equal length; ``track`` indexes ``tracks``; ``node`` indexes the profile's nodes."""

    node: npt.NDArray[np.int32]
    track: npt.NDArray[np.int32]
    start_ns: npt.NDArray[np.int64]
    dur_ns: npt.NDArray[np.int64]
    category: npt.NDArray[np.int8]
    flags: npt.NDArray[np.uint8]
    correlation: npt.NDArray[np.int64]
    tracks: tuple[Track, ...] = field(default=())

    def __len__(self) -> int:
        return int(self.node.shape[0])

    def columns(self) -> dict[str, npt.NDArray[Any]]:
        return {name: getattr(self, name) for name in COLUMNS}

    @staticmethod
    def from_columns(columns: dict[str, Any], tracks: tuple[Track, ...]) -> Timeline:
        arrays: dict[str, Any] = {name: np.asarray(columns[name], dtype=dtype) for name, dtype in COLUMNS.items()}
        lengths = {a.shape[0] for a in arrays.values()}
        if len(lengths) > 1:
            raise ValueError(f"timeline columns have different lengths: {sorted(lengths)}")
        return Timeline(tracks=tracks, **arrays)

    def select(self, mask: npt.NDArray[np.bool_]) -> Timeline:
        cols = {name: col[mask] for name, col in self.columns().items()}
        return Timeline(tracks=self.tracks, **cols)

    def devices(self) -> list[str]:
        return sorted({t.device for t in self.tracks})

    def span_ns(self) -> int | None:
        """First start to last end of the ops, runtime calls and device work: the wall time the timeline
        covers (the intervals of user lines, modules and steps that an import keeps are left out of it)."""
        keep = self.category != int(Category.FRAME)
        if not keep.any():
            return None
        return int((self.start_ns[keep] + self.dur_ns[keep]).max() - self.start_ns[keep].min())


class TimelineBuilder:
    """Appends rows into growable Python lists; ``build()`` turns them into arrays."""

    def __init__(self) -> None:
        self._cols: dict[str, list[int]] = {name: [] for name in COLUMNS}
        self._tracks: dict[Track, int] = {}

    def track(self, name: str, device: str, kind: str = "stream") -> int:
        key = Track(name, device, kind)
        idx = self._tracks.get(key)
        if idx is None:
            idx = self._tracks[key] = len(self._tracks)
        return idx

    def add(
        self,
        node: int,
        track: int,
        start_ns: int,
        dur_ns: int,
        category: Category,
        flags: int = 0,
        correlation: int = -1,
    ) -> None:
        c = self._cols
        c["node"].append(node)
        c["track"].append(track)
        c["start_ns"].append(start_ns)
        c["dur_ns"].append(dur_ns)
        c["category"].append(int(category))
        c["flags"].append(flags)
        c["correlation"].append(correlation)

    def __len__(self) -> int:
        return len(self._cols["node"])

    def build(self) -> Timeline:
        return Timeline.from_columns(self._cols, tuple(self._tracks))
