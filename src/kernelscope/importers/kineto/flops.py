"""FLOPs for trace ops: decode Kineto's ``Input Dims`` / ``Concrete Inputs`` and apply the shared
rules of ``attribute.costs`` (the same table live runs use)."""

from __future__ import annotations

from typing import Any

import msgspec

from ...attribute.costs import FLOP_RULES
from ...attribute.costs import op_flops as _rule_flops

__all__ = ["FLOP_RULES", "op_flops"]


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
