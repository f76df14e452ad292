"""JAX/XLA XPlane profiles (``*.xplane.pb``): decoded with ``protobuf`` directly, no TensorFlow or JAX needed.

``reader`` turns the XSpace into typed records, ``hlo`` joins instructions to the HLO modules in the
metadata plane (name stacks and stack frames), ``place`` and ``build`` write the Profile.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ...errors import BadInputError
from ...model import Profile
from ...model.devices import from_record
from ...trust.limits import gunzip_capped, read_file_capped
from ..registry import Importer, register

if TYPE_CHECKING:
    from .callsites import Stack

__all__ = ["load_xplane", "sniff_xplane"]


def sniff_xplane(path: str, head: bytes) -> bool:
    if path.endswith((".xplane.pb", ".xplane.pb.gz")):
        return True
    # XSpace field 1 (planes) first; plane names like "/host:CPU" or "/device:GPU:0" early on.
    return head[:1] == b"\x0a" and (b"/host:" in head[:4096] or b"/device:" in head[:4096])


def _protobuf() -> tuple[Any, Any, Any]:
    try:
        from google.protobuf.message import DecodeError

        from .schema import HloProto, XSpace
    except ImportError as exc:
        raise BadInputError(f"reading XPlane files needs protobuf ({exc}); pip install 'kernelscope[jax]'") from None
    return XSpace, HloProto, DecodeError


def load_xplane(path: str, call_sites: Mapping[str, Sequence[Stack]] | None = None) -> Profile:
    """Import one XPlane. Bad input raises BadInputError (one line). ``call_sites``: a live run's recorded
    callers of each jitted function (``collect.jax_calls``), which tell apart call sites sharing an executable."""
    XSpace, HloProto, DecodeError = _protobuf()
    from .build import build_profile
    from .hlo import HloModule
    from .reader import read_space

    try:
        data = read_file_capped(path)
    except OSError as exc:
        raise BadInputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if data[:2] == b"\x1f\x8b":  # .xplane.pb.gz
        import zlib

        try:
            data = gunzip_capped(data, path)
        except (OSError, EOFError, zlib.error) as exc:
            raise BadInputError(f"{path}: corrupt gzip data ({exc}); re-copy or re-export the profile") from None
    space = XSpace()
    try:
        space.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise BadInputError(
            f"{path}: not a readable XPlane protobuf ({exc}); re-copy or re-export the profile"
        ) from None
    if not any(p.name for p in space.planes):
        raise BadInputError(f"{path}: the XPlane has no planes (nothing was recorded)")
    records = read_space(space)
    modules: dict[int, HloModule] = {}
    for program_id, blob in records.hlo_protos.items():
        proto = HloProto()
        try:
            proto.ParseFromString(blob)
        except (DecodeError, RuntimeError, ValueError):
            records.warnings[f"unreadable HLO proto for program {program_id}"] += 1
            continue
        modules[program_id] = HloModule(proto.hlo_module)
    if not records.ops:
        raise BadInputError(f"{path}: the XPlane holds no XLA op executions (was the profiled code jitted and run?)")
    metadata: dict[str, Any] = {
        "source": {"format": "xplane", "path": os.path.abspath(path), "bytes": len(data), "events": len(records.ops)},
        "framework": "jax",
        "devices": [from_record(d).to_json() for d in records.devices],
        "hlo_modules": {str(pid): m.name for pid, m in sorted(modules.items())},
        "jit_executables": jit_executables(modules, {ev.program_id for ev in records.ops}),
        **records.metadata,
    }
    return build_profile(records, modules, metadata, call_sites)


def jit_executables(modules: dict[int, Any], ran: set[int]) -> list[dict[str, Any]]:
    """Per executable that ran: its jitted function and the user line that called it (first trace).

    XLA compiles one executable per jitted function and input signature (shapes, dtypes, static
    arguments): several executables of one function are recompilations (the advisor's ``jit_recompile``).
    """
    from .place import user_frames

    out: list[dict[str, Any]] = []
    for pid, m in sorted(modules.items()):
        if pid not in ran or not m.name.startswith("jit_"):
            continue
        lines = user_frames(m.context)
        if not m.traced_function_on_stack or not lines:
            continue  # a library's eager op (jit_add, jit_broadcast_in_dim): not the program's jitted function
        row: dict[str, Any] = {"program_id": pid, "function": m.name[4:], "instructions": len(m)}
        row["file"], row["line"] = lines[-1].file, lines[-1].line
        out.append(row)
    return out


register(
    Importer(
        name="xplane",
        description="JAX/XLA XPlane profile (.xplane.pb)",
        sniff=sniff_xplane,
        load=load_xplane,
    )
)
