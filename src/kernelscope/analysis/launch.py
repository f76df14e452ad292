"""Kernel launch statistics per device.

Launch delay = kernel start − start of the runtime call that launched it (joined on
``correlation``). A kernel *shorter than its launch overhead* ran for less time than
the host spent in the runtime call that launched it: the host cannot keep the GPU fed
with such kernels (fuse them, or capture them in a CUDA graph).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..model import Profile
from .rows import KERNEL_CATEGORIES, in_categories, launching_call, stream_track_mask


@dataclass(frozen=True)
class DeviceLaunch:
    device: str
    kernels: int
    launched: int  # kernels whose launching call is in the trace
    delay_median_ns: float
    delay_p90_ns: float
    delay_max_ns: float
    launch_call_mean_ns: float
    shorter_than_launch: int
    shorter_than_launch_ns: int  # their total kernel time

    def to_json(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "kernels": self.kernels,
            "launched": self.launched,
            "delay_median_us": self.delay_median_ns / 1e3,
            "delay_p90_us": self.delay_p90_ns / 1e3,
            "delay_max_us": self.delay_max_ns / 1e3,
            "launch_call_mean_us": self.launch_call_mean_ns / 1e3,
            "shorter_than_launch": self.shorter_than_launch,
            "shorter_than_launch_time_ms": self.shorter_than_launch_ns / 1e6,
        }


@dataclass(frozen=True)
class LaunchStats:
    devices: tuple[DeviceLaunch, ...]

    def to_json(self) -> list[dict[str, Any]]:
        return [d.to_json() for d in self.devices]


def launch_stats(profile: Profile) -> LaunchStats:
    tl = profile.timeline
    if tl is None or len(tl) == 0:
        return LaunchStats(())
    kern = in_categories(tl, KERNEL_CATEGORIES) & stream_track_mask(tl)
    call = launching_call(tl)
    track_device = [t.device for t in tl.tracks]
    out: list[DeviceLaunch] = []
    for device in sorted({track_device[t] for t in np.unique(tl.track[kern]).tolist()}):
        on = np.asarray([d == device for d in track_device], dtype=bool)[tl.track] & kern
        rows = np.flatnonzero(on)
        launched = rows[call[rows] >= 0]
        calls = call[launched]
        delay = (tl.start_ns[launched] - tl.start_ns[calls]).astype(np.float64)
        call_dur = tl.dur_ns[calls]
        short = tl.dur_ns[launched] < call_dur
        has = delay.size > 0
        out.append(
            DeviceLaunch(
                device=device,
                kernels=int(rows.size),
                launched=int(launched.size),
                delay_median_ns=float(np.median(delay)) if has else 0.0,
                delay_p90_ns=float(np.percentile(delay, 90)) if has else 0.0,
                delay_max_ns=float(delay.max()) if has else 0.0,
                launch_call_mean_ns=float(call_dur.mean()) if has else 0.0,
                shorter_than_launch=int(short.sum()),
                shorter_than_launch_ns=int(tl.dur_ns[launched][short].sum()),
            )
        )
    return LaunchStats(tuple(out))
