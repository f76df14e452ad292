"""What a live torch run says about its machine: devices with what peak-rate analyses need."""

from __future__ import annotations

import os
import platform
from typing import Any

from ..model.devices import Device


def is_device_event(e: Any) -> bool:
    try:
        return str(e.device_type()).endswith("CUDA")
    except Exception:  # pragma: no cover - older KinetoEvent APIs
        return False


def torch_devices() -> list[dict[str, Any]]:
    """The host and every visible GPU, in the one device shape (model.devices)."""
    import torch

    devices = [Device(id="cpu", type="cpu", name=platform.processor() or platform.machine(), cores=os.cpu_count() or 0)]
    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            p = torch.cuda.get_device_properties(i)
            # clocks and bus width (peak FLOP/s and bandwidth): present on recent torch builds
            clocks = {key: getattr(p, key, 0) for key in ("clock_rate", "memory_clock_rate", "memory_bus_width")}
            devices.append(
                Device(
                    id=f"cuda:{i}",
                    type="cuda",
                    index=i,
                    name=p.name,
                    arch=f"sm_{p.major}{p.minor}",
                    sms=p.multi_processor_count,
                    memory_bytes=p.total_memory,
                    clock_khz=int(clocks["clock_rate"] or 0),
                    memory_clock_khz=int(clocks["memory_clock_rate"] or 0),
                    bus_bits=int(clocks["memory_bus_width"] or 0),
                )
            )
    return [d.to_json() for d in devices]
