"""What a live torch run says about its machine: devices with what peak-rate analyses need."""

from __future__ import annotations

import os
import platform
from typing import Any


def is_device_event(e: Any) -> bool:
    try:
        return str(e.device_type()).endswith("CUDA")
    except Exception:  # pragma: no cover - older KinetoEvent APIs
        return False


def torch_devices() -> list[dict[str, Any]]:
    import torch

    devices: list[dict[str, Any]] = [
        {"type": "cpu", "name": platform.processor() or platform.machine(), "cores": os.cpu_count()}
    ]
    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            p = torch.cuda.get_device_properties(i)
            device: dict[str, Any] = {
                "type": "cuda",
                "index": i,
                "name": p.name,
                "arch": f"sm_{p.major}{p.minor}",
                "sms": p.multi_processor_count,
                "memory_bytes": p.total_memory,
            }
            # clocks and bus width (peak FLOP/s and bandwidth): present on recent torch builds
            for key in ("clock_rate", "memory_clock_rate", "memory_bus_width"):
                value = getattr(p, key, None)
                if isinstance(value, int) and value > 0:
                    device[key] = value
            devices.append(device)
    return devices
