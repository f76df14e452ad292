"""FLOPs of framework ops, computed from input shapes — one rule table for live runs and imports.

Profilers do not record FLOPs in their traces (FIELD-NOTES), so we count them the way roofline
tools do: 2 per multiply-add. A shape that does not fit the op's signature gives 0 (an estimate we
cannot make is not an error). Callers count an op nested inside a counted op once, at the outer or
inner level as they document, so ``aten::linear → aten::addmm`` is not counted twice.

``shapes``: one entry per op input, a list of ints for a tensor, anything else otherwise.
``concrete``: optional concrete input values (lists of ints, or their ``"[1, 1]"`` text from traces).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

Rule = Callable[[Sequence[Any], Sequence[Any]], float]


def _shape(shapes: Sequence[Any], i: int) -> list[int] | None:
    if i >= len(shapes):
        return None
    s = shapes[i]
    if not isinstance(s, (list, tuple)) or not all(type(d) is int and d >= 0 for d in s):
        return None
    return list(s)


def _mm(shapes: Sequence[Any], concrete: Sequence[Any]) -> float:
    a, b = _shape(shapes, 0), _shape(shapes, 1)
    if a is None or b is None or len(a) != 2 or len(b) != 2:
        return 0.0
    return 2.0 * a[0] * a[1] * b[1]


def _addmm(shapes: Sequence[Any], concrete: Sequence[Any]) -> float:
    return _mm(shapes[1:3], ())


def _bmm(shapes: Sequence[Any], concrete: Sequence[Any]) -> float:
    a, b = _shape(shapes, 0), _shape(shapes, 1)
    if a is None or b is None or len(a) != 3 or len(b) != 3:
        return 0.0
    return 2.0 * a[0] * a[1] * a[2] * b[2]


def _baddbmm(shapes: Sequence[Any], concrete: Sequence[Any]) -> float:
    return _bmm(shapes[1:3], ())


def _matmul(shapes: Sequence[Any], concrete: Sequence[Any]) -> float:
    a, b = _shape(shapes, 0), _shape(shapes, 1)
    if a is None or b is None or not a or not b:
        return 0.0
    if len(b) == 1:
        return 2.0 * math.prod(a)
    k, n = b[-2], b[-1]
    if a[-1] != k:
        return 0.0
    batch = math.prod(a[:-1])
    extra = math.prod(b[:-2]) if len(b) > 2 and len(a) <= 2 else 1
    return 2.0 * batch * k * n * extra


def _linear(shapes: Sequence[Any], concrete: Sequence[Any]) -> float:
    x, w = _shape(shapes, 0), _shape(shapes, 1)
    if x is None or w is None or not x or len(w) != 2 or x[-1] != w[1]:
        return 0.0
    return 2.0 * math.prod(x[:-1]) * w[0] * w[1]


def _ints(value: Any) -> list[int] | None:
    if isinstance(value, (list, tuple)) and all(type(v) is int for v in value):
        return list(value)
    if not isinstance(value, str) or not value.startswith("["):
        return None
    try:
        return [int(p) for p in value.strip("[]").split(",") if p.strip()]
    except ValueError:
        return None


def _conv(shapes: Sequence[Any], concrete: Sequence[Any]) -> float:
    """(input, weight, bias, stride, padding, dilation, ...): output size from stride/padding/dilation."""
    x, w = _shape(shapes, 0), _shape(shapes, 1)
    if x is None or w is None or len(x) < 3 or len(x) != len(w):
        return 0.0
    stride = _ints(concrete[3]) if len(concrete) > 3 else None
    padding = _ints(concrete[4]) if len(concrete) > 4 else None
    dilation = _ints(concrete[5]) if len(concrete) > 5 else None
    out = 1
    for d in range(len(x) - 2):
        s = stride[d] if stride and d < len(stride) else 1
        p = padding[d] if padding and d < len(padding) else 0
        dl = dilation[d] if dilation and d < len(dilation) else 1
        size = (x[2 + d] + 2 * p - dl * (w[2 + d] - 1) - 1) // max(s, 1) + 1
        if size <= 0:
            return 0.0
        out *= size
    # weight = [out_channels, in_channels / groups, *kernel]
    return 2.0 * x[0] * w[0] * out * math.prod(w[1:])


def _conv_backward(shapes: Sequence[Any], concrete: Sequence[Any]) -> float:
    # (grad_output, input, weight, ...): grads for input and weight, each as costly as the forward
    return 2.0 * _conv(shapes[1:3], ())


def _sdpa(shapes: Sequence[Any], concrete: Sequence[Any]) -> float:
    q, k = _shape(shapes, 0), _shape(shapes, 1)
    if q is None or k is None or len(q) < 2 or len(k) < 2:
        return 0.0
    return 4.0 * math.prod(q[:-2]) * q[-2] * k[-2] * q[-1]  # QKᵀ and PV


def _sdpa_backward(shapes: Sequence[Any], concrete: Sequence[Any]) -> float:
    return 2.5 * _sdpa(shapes[1:3], ())  # (grad_out, q, k, ...): dQ, dK, dV and the recompute


FLOP_RULES: dict[str, Rule] = {
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
    "aten::convolution_backward": _conv_backward,
    "aten::scaled_dot_product_attention": _sdpa,
    "aten::_scaled_dot_product_flash_attention_for_cpu": _sdpa,
    "aten::_scaled_dot_product_flash_attention": _sdpa,
    "aten::_scaled_dot_product_efficient_attention": _sdpa,
    "aten::_scaled_dot_product_cudnn_attention": _sdpa,
    "aten::_flash_attention_forward": _sdpa,
    "aten::_scaled_dot_product_flash_attention_for_cpu_backward": _sdpa_backward,
    "aten::_scaled_dot_product_flash_attention_backward": _sdpa_backward,
    "aten::_scaled_dot_product_efficient_attention_backward": _sdpa_backward,
    "aten::_flash_attention_backward": _sdpa_backward,
}


def op_flops(name: str, shapes: Sequence[Any], concrete: Sequence[Any] = ()) -> float | None:
    """FLOPs of one call, or None when the op has no rule. Always finite and below 2**63."""
    rule = FLOP_RULES.get(name)
    if rule is None:
        return None
    try:
        value = float(rule(shapes, concrete))
    except (TypeError, ValueError, OverflowError, IndexError):
        return 0.0
    return value if math.isfinite(value) and 0 <= value < 9e18 else 0.0
