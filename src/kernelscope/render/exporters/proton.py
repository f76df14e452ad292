"""Proton's profile format: what ``proton-viewer`` reads.

Proton (``triton.profiler``) writes a JSON list ``[root, device_info]``. ``root`` is a
hatchet literal node ``{"frame": {"name", "type"}, "metrics": {...}, "children": [...]}``
whose root is named ``ROOT``; every frame has type ``"function"`` (kernels included).
The metrics in the file are each node's **own** values: Proton puts a kernel's
``time (ns)`` and ``count`` on the kernel node, and ``proton-viewer`` derives the
inclusive columns (``time (ns) (inc)``) with hatchet's ``update_inclusive_columns``.
Writing inclusive values here would count every kernel once per ancestor.

Hatchet takes the list of metric columns from the root's metrics, so every node
lists every metric (0 where it has none). Names follow Proton: ``time (ns)`` (the
viewer reads the unit from the parentheses), ``cpu_time (ns)``, ``count``,
``flops`` and ``bytes`` (from which the viewer derives ``tflop/s`` and ``gbyte/s``).
Other metrics keep their kernelscope names. Kernel nodes whose device reads
``cuda:N``/``hip:N`` also carry Proton's ``device_id``/``device_type`` strings, and
``device_info`` lists devices from ``metadata["devices"]`` entries that give Proton's
fields (``arch``, ``num_sms``, ``clock_rate``, ``memory_clock_rate``, ``bus_width``).
"""

from __future__ import annotations

import json
import re
from typing import Any, TextIO

from ...model import FrameKind, Profile
from ._tree import column_names, number, write_literal_tree
from .registry import Exporter, register

PROTON_NAMES = {
    "time_ns": "time (ns)",
    "cpu_time_ns": "cpu_time (ns)",
    "count": "count",
    "flops": "flops",
    "bytes": "bytes",
}
ALWAYS = ("time_ns", "count")  # Proton's root always has these two
DEVICE_FIELDS = ("clock_rate", "memory_clock_rate", "bus_width", "arch", "num_sms")
_DEVICE = re.compile(r"(?:^|[/ ])(cuda|hip|rocm):(\d+)$", re.IGNORECASE)


def _device(device: str) -> tuple[str, str] | None:
    """``"rank0/cuda:1"`` -> ``("CUDA", "1")``; None when it names no GPU."""
    m = _DEVICE.search(device)
    if m is None:
        return None
    kind = "HIP" if m.group(1).lower() in ("hip", "rocm") else "CUDA"
    return kind, m.group(2)


def device_info(profile: Profile) -> dict[str, dict[str, dict[str, Any]]]:
    out: dict[str, dict[str, dict[str, Any]]] = {}
    devices = profile.metadata.get("devices")
    if not isinstance(devices, list):
        return out
    for dev in devices:
        if not isinstance(dev, dict):
            continue
        where = _device(str(dev.get("device", dev.get("name", ""))))
        if where is None or not all(k in dev for k in DEVICE_FIELDS):
            continue
        out.setdefault(where[0], {})[where[1]] = {k: dev[k] for k in DEVICE_FIELDS}
    return out


def dump(profile: Profile, fh: TextIO) -> None:
    metrics = list(ALWAYS) + [m for m in profile.metric_names if m not in ALWAYS]
    names = column_names({m: PROTON_NAMES.get(m, m) for m in metrics})
    columns = [(names[m], profile.exclusive(m).tolist()) for m in metrics]

    def node_json(node: int) -> dict[str, Any]:
        frame = profile.frame_of(node)
        label = "ROOT" if node == 0 else frame.label()
        values: dict[str, Any] = {name: number(col[node]) for name, col in columns}
        if frame.kind is FrameKind.KERNEL:
            where = _device(frame.device)
            if where is not None:
                values["device_id"], values["device_type"] = where[1], where[0]
        return {"frame": {"name": label, "type": "function"}, "metrics": values}

    fh.write("[")
    write_literal_tree(fh, profile, node_json)
    fh.write(",")
    fh.write(json.dumps(device_info(profile), separators=(",", ":"), default=str))
    fh.write("]\n")


EXPORTER = register(
    Exporter(
        name="proton",
        description="Proton profile (JSON) for proton-viewer",
        suffix=".proton.json",
        dump=dump,
    )
)
