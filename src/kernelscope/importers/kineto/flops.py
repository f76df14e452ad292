"""FLOPs and bytes for trace ops: decode Kineto's ``Input Dims`` / ``Input type`` / ``Concrete Inputs``
and apply the shared rules of ``attribute.costs`` (the same tables live runs use)."""

from __future__ import annotations

from typing import Any

import msgspec

from ...attribute.costs import FLOP_RULES, ITEMSIZE, NO_TRAFFIC
from ...attribute.costs import op_bytes as _rule_bytes
from ...attribute.costs import op_flops as _rule_flops

__all__ = ["FLOP_RULES", "NO_TRAFFIC", "op_bytes", "op_flops"]


def _decoded(value: Any) -> Any:
    """Shapes arrive raw from the fast decoder (``msgspec.Raw``) or decoded from the tolerant one."""
    if isinstance(value, msgspec.Raw):
        if not len(value):
            return None
        try:
            return msgspec.json.decode(value)
        except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
            return None
    return value


def op_flops(name: str, dims: Any, concrete: Any) -> float:
    shapes = _decoded(dims)
    if not isinstance(shapes, list):
        return 0.0
    conc = _decoded(concrete)
    return _rule_flops(name, shapes, conc if isinstance(conc, list) else ()) or 0.0


def op_bytes(name: str, dims: Any, types: Any) -> int:
    """Bytes one call reads and writes (``Input Dims`` + ``Input type``); -1 when it has no tensor input."""
    shapes = _decoded(dims)
    if not isinstance(shapes, list):
        return -1
    names = _decoded(types)
    itemsizes = [ITEMSIZE.get(t, 0) if isinstance(t, str) else 0 for t in names] if isinstance(names, list) else []
    value = _rule_bytes(name, shapes, itemsizes)
    return -1 if value is None else int(value)
