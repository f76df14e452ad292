"""FLOPs of matrix products and convolutions from recorded input shapes (``Input Dims``).

Kineto records shapes, never FLOPs (FIELD-NOTES). Counted as 2 per multiply-add. Any shape that
does not fit the op's signature gives 0: an estimate we cannot make is not an error.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

Dims = Sequence[Sequence[int]]


def _shape(dims: Any, i: int) -> list[int] | None:
    if not isinstance(dims, list) or i >= len(dims):
        return None
    s = dims[i]
    if not isinstance(s, list) or not all(type(d) is int and d >= 0 for d in s):
        return None
    return s


def _mm(dims: Any, concrete: Any) -> float:
    a, b = _shape(dims, 0), _shape(dims, 1)
    if a is None or b is None or len(a) != 2 or len(b) != 2:
        return 0.0
    return 2.0 * a[0] * a[1] * b[1]


def _addmm(dims: Any, concrete: Any) -> float:
    a, b = _shape(dims, 1), _shape(dims, 2)
    if a is None or b is None or len(a) != 2 or len(b) != 2:
        return 0.0
    return 2.0 * a[0] * a[1] * b[1]


def _bmm(dims: Any, concrete: Any) -> float:
    a, b = _shape(dims, 0), _shape(dims, 1)
    if a is None or b is None or len(a) != 3 or len(b) != 3:
        return 0.0
    return 2.0 * a[0] * a[1] * a[2] * b[2]


def _baddbmm(dims: Any, concrete: Any) -> float:
    return _bmm(dims[1:] if isinstance(dims, list) else None, concrete)


def _matmul(dims: Any, concrete: Any) -> float:
    a, b = _shape(dims, 0), _shape(dims, 1)
    if a is None or b is None or not a or not b:
        return 0.0
    if len(b) == 1:
        return 2.0 * math.prod(a)
    k, n = b[-2], b[-1]
    batch = math.prod(a[:-1]) if len(a) >= 2 else 1
    if len(a) >= 1 and a[-1] != k:
        return 0.0
    extra = math.prod(b[:-2]) if len(b) > 2 and len(a) <= 2 else 1
    return 2.0 * batch * k * n * extra


def _linear(dims: Any, concrete: Any) -> float:
    x, w = _shape(dims, 0), _shape(dims, 1)
    if x is None or w is None or not x or len(w) != 2 or x[-1] != w[1]:
        return 0.0
    return 2.0 * math.prod(x[:-1]) * w[0] * w[1]


def _ints(text: Any) -> list[int] | None:
    if not isinstance(text, str) or not text.startswith("["):
        return None
    try:
        return [int(p) for p in text.strip("[]").split(",") if p.strip()]
    except ValueError:
        return None


def _conv(dims: Any, concrete: Any) -> float:
    """aten::convolution / conv2d / conv1d / conv3d: (input, weight, bias, stride, padding, dilation, ...)."""
    x, w = _shape(dims, 0), _shape(dims, 1)
    if x is None or w is None or len(x) < 3 or len(x) != len(w):
        return 0.0
    spatial = len(x) - 2
    conc = concrete if isinstance(concrete, list) else []
    stride = _ints(conc[3]) if len(conc) > 3 else None
    padding = _ints(conc[4]) if len(conc) > 4 else None
    dilation = _ints(conc[5]) if len(conc) > 5 else None
    out = 1
    for d in range(spatial):
        s = stride[d] if stride and d < len(stride) else 1
        p = padding[d] if padding and d < len(padding) else 0
        dl = dilation[d] if dilation and d < len(dilation) else 1
        size = (x[2 + d] + 2 * p - dl * (w[2 + d] - 1) - 1) // max(s, 1) + 1
        if size <= 0:
            return 0.0
        out *= size
    # weight = [out_channels, in_channels / groups, *kernel]
    return 2.0 * x[0] * w[0] * out * math.prod(w[1:])


FLOP_RULES: dict[str, Callable[[Any, Any], float]] = {
    "aten::mm": _mm,
    "aten::addmm": _addmm,
    "aten::bmm": _bmm,
    "aten::baddbmm": _baddbmm,
    "aten::matmul": _matmul,
    "aten::linear": _linear,
    "aten::convolution": _conv,
    "aten::_convolution": _conv,
    "aten::conv1d": _conv,
    "aten::conv2d": _conv,
    "aten::conv3d": _conv,
}


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
    rule = FLOP_RULES.get(name)
    if rule is None:
        return 0.0
    dims = _decoded(dims)
    if dims is None:
        return 0.0
    try:
        value = rule(dims, _decoded(concrete))
    except (TypeError, ValueError, OverflowError, IndexError):
        return 0.0
    return value if math.isfinite(value) and 0 <= value < 9e18 else 0.0  # stored as int64
