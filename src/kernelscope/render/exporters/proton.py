"""Proton's profile format: what ``proton-viewer`` reads.

Proton (``triton.profiler``) writes a JSON list ``[root, device_info]``. ``root`` is a
hatchet literal node ``{"frame": {"name", "type"}, "metrics": {...}, "children": [...]}``
whose root is named ``ROOT``; every frame has type ``"function"`` (kernels included).
Python frames are named as Proton names them, ``path/file.py:function@line`` (so
``proton-viewer -f file_function_line|function_line|file_function`` works); other frames
use ``Frame.label()``. Each frame also carries the fields kernelscope's importer needs to
rebuild it exactly (``ks_kind``, ... see ``_tree.frame_fields``); the viewer ignores them.
The metrics in the file are each node's **own** values: Proton puts a kernel's
``time (ns)`` and ``count`` on the kernel node, and ``proton-viewer`` derives the
inclusive columns (``time (ns) (inc)``) with hatchet's ``update_inclusive_columns``.
Writing inclusive values here would count every kernel once per ancestor.

Hatchet takes the list of metric columns from the root's metrics, so every node
lists every metric (0 where it has none). Names follow Proton: ``time (ns)`` (the
viewer reads the unit from the parentheses), ``cpu_time (ns)``, ``count``,
``flops`` and ``bytes`` (from which the viewer derives ``tflop/s`` and ``gbyte/s``).
Other metrics keep their kernelscope names (``flops16`` from a Proton import stays
``flops16``). Kernel nodes whose device reads ``cuda:N``/``hip:N`` also carry Proton's
``device_id``/``device_type`` strings, and ``device_info`` lists the devices of
``metadata["devices"]`` for which all of Proton's fields are known (``arch``, ``num_sms``,
``clock_rate`` in kHz, ``memory_clock_rate`` in kHz, ``bus_width`` in bits), under Proton's
names or torch's (``sms``/``multi_processor_count``, ``memory_bus_width``; ``arch`` ``sm_90``
is written ``90``; model.devices reads every source's shape). ``proton-viewer -m util`` needs them; a device without them is left out.
"""

from __future__ import annotations

import json
import re
from typing import Any, TextIO

from ...model import FrameKind, Profile
from ...model.devices import devices_of
from ._tree import column_names, frame_fields, number, write_literal_tree
from .registry import Exporter, register

PROTON_NAMES = {
    "time_ns": "time (ns)",
    "cpu_time_ns": "cpu_time (ns)",
    "count": "count",
    "flops": "flops",
    "bytes": "bytes",
}
ALWAYS = ("time_ns", "count")  # Proton's root always has these two
_DEVICE = re.compile(r"(?:^|[/ ])(cuda|hip|rocm):(\d+)$", re.IGNORECASE)


def _device(device: str) -> tuple[str, str] | None:
    """``"rank0/cuda:1"`` -> ``("CUDA", "1")``; None when it names no GPU."""
    m = _DEVICE.search(device)
    if m is None:
        return None
    kind = "HIP" if m.group(1).lower() in ("hip", "rocm") else "CUDA"
    return kind, m.group(2)


def device_info(profile: Profile) -> dict[str, dict[str, dict[str, Any]]]:
    """Proton's ``{"CUDA": {"0": {"arch": "90", "num_sms": ..., ...}}}`` for the GPUs whose fields it
    needs are all known."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for dev in devices_of(profile.metadata):
        if dev.type not in ("cuda", "hip") or dev.index < 0:
            continue
        arch = dev.arch[3:] if dev.arch.startswith("sm_") else dev.arch
        values = {
            "arch": arch,
            "num_sms": dev.sms,
            "clock_rate": dev.clock_khz,
            "memory_clock_rate": dev.memory_clock_khz,
            "bus_width": dev.bus_bits,
        }
        if not all(values.values()):
            continue
        kind = "HIP" if dev.type == "hip" else "CUDA"
        out.setdefault(kind, {})[str(dev.index)] = {**dict(dev.extra), **values}
    return out


def dump(profile: Profile, fh: TextIO) -> None:
    metrics = list(ALWAYS) + [m for m in profile.metric_names if m not in ALWAYS]
    names = column_names({m: PROTON_NAMES.get(m, m) for m in metrics})
    columns = [(names[m], profile.exclusive(m).tolist()) for m in metrics]

    def node_json(node: int) -> dict[str, Any]:
        frame = profile.frame_of(node)
        if node == 0:
            label = "ROOT"
        elif frame.kind is FrameKind.PYTHON:
            label = f"{frame.file}:{frame.name}@{frame.line}"
        else:
            label = frame.label()
        values: dict[str, Any] = {name: number(col[node]) for name, col in columns}
        if frame.kind is FrameKind.KERNEL:
            where = _device(frame.device)
            if where is not None:
                values["device_id"], values["device_type"] = where[1], where[0]
        fields = frame_fields(frame, label) if node else {}
        return {"frame": {"name": label, "type": "function", **fields}, "metrics": values}

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
