"""The per-device timeline breakdown of DESIGN.md (= TraceLens' ``gpu_timeline``).

Only device events whose launch is in the trace (``LINKED``) count; the others were
queued before profiling began and are reported separately. Over the span from the
first to the last linked event of a device:

- busy = union of all of them;
- computation = union of non-communication kernels and memsets;
- exposed communication = communication not overlapped by computation;
- exposed memcpy = memcpy overlapped by neither computation nor communication;
- idle = total − busy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..model import Profile
from ..model.timeline import Category, Timeline
from .intervals import union_length
from .rows import device_rows, linked

SCHEMA = 1


def _ms(ns: int) -> float:
    return ns / 1e6


def _pct(part: int, whole: int) -> float:
    return 100.0 * part / whole if whole else 0.0


@dataclass(frozen=True)
class DeviceBreakdown:
    device: str
    total_ns: int
    busy_ns: int
    computation_ns: int
    exposed_comm_ns: int
    exposed_memcpy_ns: int
    total_comm_ns: int
    total_memcpy_ns: int
    events: int  # linked device events counted above
    unlinked_events: int
    unlinked_ns: int  # sum of the unlinked events' durations

    @property
    def idle_ns(self) -> int:
        return self.total_ns - self.busy_ns

    def to_json(self) -> dict[str, Any]:
        parts = {
            "total": self.total_ns,
            "busy": self.busy_ns,
            "idle": self.idle_ns,
            "computation": self.computation_ns,
            "exposed_comm": self.exposed_comm_ns,
            "exposed_memcpy": self.exposed_memcpy_ns,
            "total_comm": self.total_comm_ns,
            "total_memcpy": self.total_memcpy_ns,
        }
        out: dict[str, Any] = {"device": self.device}
        out.update({f"{k}_time_ms": _ms(v) for k, v in parts.items()})
        out.update({f"{k}_time_pct": _pct(v, self.total_ns) for k, v in parts.items() if k != "total"})
        out["events"] = self.events
        out["unlinked_events"] = self.unlinked_events
        out["unlinked_time_ms"] = _ms(self.unlinked_ns)
        return out


@dataclass(frozen=True)
class Breakdown:
    devices: tuple[DeviceBreakdown, ...]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"schema": SCHEMA, "devices": [d.to_json() for d in self.devices]}
        merged = self.across_devices()
        if merged is not None:
            out["across_devices"] = merged
        return out

    def across_devices(self) -> dict[str, Any] | None:
        """With several devices (ranks): min / mean / max of each part, and the most idle device."""
        if len(self.devices) < 2:
            return None
        parts = ("total", "busy", "idle", "computation", "exposed_comm", "exposed_memcpy", "total_comm", "total_memcpy")
        rows = [d.to_json() for d in self.devices]
        out: dict[str, Any] = {"devices": len(rows)}
        for part in parts:
            values = [r[f"{part}_time_ms"] for r in rows]
            out[f"{part}_time_ms"] = {"min": min(values), "mean": sum(values) / len(values), "max": max(values)}
        most_idle = max(rows, key=lambda r: r["idle_time_ms"])
        out["most_idle_device"] = most_idle["device"]
        return out


def _union(tl: Timeline, mask: np.ndarray[Any, np.dtype[np.bool_]]) -> int:
    s = tl.start_ns[mask]
    return union_length(s, s + tl.dur_ns[mask])


def device_breakdown(tl: Timeline, device: str) -> DeviceBreakdown:
    on_device = np.asarray([t.device == device for t in tl.tracks], dtype=bool)[tl.track] & device_rows(tl)
    is_linked = linked(tl)
    rows = on_device & is_linked
    unlinked = on_device & ~is_linked
    cat = tl.category
    comp = rows & ((cat == int(Category.KERNEL)) | (cat == int(Category.MEMSET)))
    comm = rows & (cat == int(Category.COMM))
    memcpy = rows & (cat == int(Category.MEMCPY))
    total = 0
    if rows.any():
        starts = tl.start_ns[rows]
        total = int((starts + tl.dur_ns[rows]).max() - starts.min())
    computation = _union(tl, comp)
    comp_or_comm = _union(tl, comp | comm)
    busy = _union(tl, rows)
    return DeviceBreakdown(
        device=device,
        total_ns=total,
        busy_ns=busy,
        computation_ns=computation,
        exposed_comm_ns=comp_or_comm - computation,
        exposed_memcpy_ns=busy - comp_or_comm,
        total_comm_ns=_union(tl, comm),
        total_memcpy_ns=_union(tl, memcpy),
        events=int(rows.sum()),
        unlinked_events=int(unlinked.sum()),
        unlinked_ns=int(tl.dur_ns[unlinked].sum()),
    )


def breakdown(profile: Profile) -> Breakdown:
    """Per device breakdown; devices without device events are left out."""
    tl = profile.timeline
    if tl is None or len(tl) == 0:
        return Breakdown(())
    dev = device_rows(tl)
    devices = sorted({tl.tracks[t].device for t in np.unique(tl.track[dev]).tolist()})
    return Breakdown(tuple(device_breakdown(tl, d) for d in devices))
