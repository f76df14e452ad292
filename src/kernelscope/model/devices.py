"""The devices a run used: one typed shape, written by every source to ``metadata["devices"]``.

Sources record devices their own way (torch's device properties, a Kineto trace's ``deviceProperties``,
Proton's ``device_info``, XPlane plane stats); each writes ``Device.to_json()`` entries, and every reader
goes through ``devices_of(metadata)``, which also reads profiles written before this shape existed.
``id`` is how the timeline names the device (``cuda:0``, ``gpu:0``, ``cpu``); fields a source does not
know keep their defaults; what only one source records stays in ``extra``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any

_TYPED = (
    "id",
    "type",
    "index",
    "name",
    "arch",
    "sms",
    "memory_bytes",
    "clock_khz",
    "memory_clock_khz",
    "bus_bits",
    "cores",
    "rank",
)


@dataclass(frozen=True, slots=True)
class Device:
    id: str  # the timeline's name for it: "cuda:0", "gpu:0", "cpu"
    type: str  # "cuda" (ROCm GPUs too, as PyTorch names them), "hip", "gpu", "tpu", "cpu"
    index: int = -1
    name: str = ""  # the vendor's: "NVIDIA H100 80GB HBM3", "AMD Instinct MI300X"
    arch: str = ""  # "sm_90", "gfx942"
    sms: int = 0  # streaming multiprocessors / compute units
    memory_bytes: int = 0
    clock_khz: int = 0
    memory_clock_khz: int = 0
    bus_bits: int = 0  # memory bus width
    cores: int = 0  # a host CPU's cores
    rank: int = -1  # the process (distributed rank) it belongs to, when profiles of several were merged
    extra: tuple[tuple[str, Any], ...] = ()  # what one source records beyond these

    @property
    def compute_capability(self) -> tuple[int, int] | None:
        """(major, minor) of an NVIDIA ``sm_XY`` arch, or the ``computeMajor``/``computeMinor`` a Kineto
        trace records (ROCm GPUs put their gfx version there: 9.4 for gfx942)."""
        m = re.fullmatch(r"sm_(\d+)(\d)", self.arch)
        if m:
            return int(m.group(1)), int(m.group(2))
        extra = dict(self.extra)
        major, minor = extra.get("computeMajor"), extra.get("computeMinor")
        return (major, minor if type(minor) is int else 0) if type(major) is int else None

    def get(self, key: str, default: Any = None) -> Any:
        """A source-specific field (``extra``)."""
        return dict(self.extra).get(key, default)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = dict(self.extra)
        for f in fields(self):
            if f.name == "extra":
                continue
            value = getattr(self, f.name)
            if value != f.default or f.name in ("id", "type"):
                out[f.name] = value
        return out

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Device:
        """A device entry; typed fields of the wrong type (a damaged or hostile profile) keep their defaults."""
        typed = {k: v for k in _TYPED if k in data and (v := _of_type(k, data[k])) is not None}
        extra = tuple(sorted((str(k), v) for k, v in data.items() if k not in _TYPED))
        typed.setdefault("id", str(data.get("device") or "?"))
        typed.setdefault("type", typed["id"].split(":", 1)[0])
        return Device(**typed, extra=extra)


_INT_FIELDS = frozenset({"index", "sms", "memory_bytes", "clock_khz", "memory_clock_khz", "bus_bits", "cores", "rank"})


def _of_type(name: str, value: Any) -> Any:
    """``value`` as the field's type (str or int), or None when it is not one."""
    if name in _INT_FIELDS:
        if isinstance(value, bool):
            return None
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
            return int(value)
        return None
    return value if isinstance(value, str) else None


def devices_of(metadata: Mapping[str, Any]) -> list[Device]:
    """The devices of a profile's metadata, in the shape above, whatever wrote it."""
    out: list[Device] = []
    raw = metadata.get("devices")
    if isinstance(raw, list):
        for d in raw:
            if isinstance(d, dict):
                out.append(from_record(d))
    elif isinstance(raw, dict):  # Proton's device_info, as an early kernelscope kept it
        out.extend(from_proton(raw))
    if not any(d.type != "cpu" for d in out):
        out.extend(from_kineto(metadata.get("deviceProperties")))
    return out


def from_record(d: Mapping[str, Any]) -> Device:
    """One device entry as any source or kernelscope version wrote it."""
    if "id" in d and "type" in d:
        return Device.from_json(d)
    if "computeMajor" in d or "totalGlobalMem" in d:  # a Kineto deviceProperties entry
        return from_kineto([d])[0]
    # an early live run ({"type": "cuda", "index", "name", "arch", "sms", "memory_bytes", clocks}),
    # an early Proton import ({"device": "cuda:0", "type": "CUDA", "num_sms", ...}) or an XPlane plane
    typ = str(d.get("type") or str(d.get("device") or "?").split(":", 1)[0]).lower()
    raw_index = d.get("index")
    ident = str(d.get("device") or (f"{typ}:{raw_index}" if isinstance(raw_index, int) else typ))
    tail = ident.rpartition(":")[2]
    index = raw_index if isinstance(raw_index, int) else int(tail) if tail.isdigit() else -1
    return Device(
        id=ident,
        type=typ,
        index=index,
        name=str(d.get("name") or ""),
        arch=_arch(d.get("arch")),
        sms=_int(d.get("sms") or d.get("num_sms")),
        memory_bytes=_int(d.get("memory_bytes")),
        clock_khz=_int(d.get("clock_rate")),
        memory_clock_khz=_int(d.get("memory_clock_rate")),
        bus_bits=_int(d.get("memory_bus_width") or d.get("bus_width")),
        cores=_int(d.get("cores")),
        extra=tuple(sorted((str(k), v) for k, v in d.items() if k not in _EARLY_KEYS)),
    )


_EARLY_KEYS = frozenset(
    {"type", "index", "device", "name", "arch", "sms", "num_sms", "memory_bytes", "clock_rate"}
    | {"memory_clock_rate", "memory_bus_width", "bus_width", "cores"}
)


def from_kineto(props: Any) -> list[Device]:
    """A Kineto trace's ``deviceProperties`` (one entry per GPU; CUDA and ROCm alike)."""
    out: list[Device] = []
    for d in props if isinstance(props, list) else []:
        if not isinstance(d, dict):
            continue
        raw_id = d.get("id")
        index = raw_id if isinstance(raw_id, int) else len(out)
        major, minor = d.get("computeMajor"), d.get("computeMinor")
        name = str(d.get("name") or "")
        nvidia = type(major) is int and not re.search(r"AMD|Instinct|Radeon", name)
        arch = f"sm_{major}{minor if type(minor) is int else 0}" if nvidia else ""  # (ROCm: its gfx version)
        kept = {"id", "name", "numSms", "totalGlobalMem"}
        out.append(
            Device(
                id=f"cuda:{index}",
                type="cuda",
                index=index,
                name=name,
                arch=arch,
                sms=_int(d.get("numSms")),
                memory_bytes=_int(d.get("totalGlobalMem")),
                extra=tuple(sorted((str(k), v) for k, v in d.items() if k not in kept)),
            )
        )
    return out


def from_proton(device_info: Any) -> list[Device]:
    """Proton's ``{"CUDA": {"0": {"arch": "90", "num_sms": 132, "clock_rate": ..., ...}}}``."""
    out: list[Device] = []
    if not isinstance(device_info, dict):
        return out
    for kind, by_index in device_info.items():
        if not isinstance(by_index, dict):
            continue
        typ = "hip" if str(kind).upper() == "HIP" else "cuda"
        for index, f in by_index.items():
            if not isinstance(f, dict):
                continue
            i = int(index) if str(index).isdigit() else -1
            known = {"arch", "num_sms", "clock_rate", "memory_clock_rate", "bus_width"}
            out.append(
                Device(
                    id=f"{typ}:{index}",
                    type=typ,
                    index=i,
                    arch=_arch(f.get("arch"), typ),
                    sms=_int(f.get("num_sms")),
                    clock_khz=_int(f.get("clock_rate")),
                    memory_clock_khz=_int(f.get("memory_clock_rate")),
                    bus_bits=_int(f.get("bus_width")),
                    extra=tuple(sorted((str(k), v) for k, v in f.items() if k not in known)),
                )
            )
    return out


def to_json(devices: Iterable[Device]) -> list[dict[str, Any]]:
    return [d.to_json() for d in devices]


def _arch(value: Any, typ: str = "cuda") -> str:
    """``"90"`` (Proton's CUDA arch) -> ``"sm_90"``; names (``sm_90``, ``gfx942``) unchanged."""
    if value is None or value == "":
        return ""
    text = str(value)
    return f"sm_{text}" if text.isdigit() and typ == "cuda" else text


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) and value > 0 else 0
