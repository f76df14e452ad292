"""FLOPs and bytes of framework ops, computed from input shapes.

Profilers do not record FLOPs in their traces (FIELD-NOTES), so we count them
the way every roofline tool does: 2·M·N·K for a matmul, and so on. Only the
ops listed here count; an op nested inside a counted op is skipped by the
caller, so ``aten::linear → aten::addmm`` counts once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

Shape = Sequence[int]


def _numel(shape: Shape) -> int:
    return math.prod(shape) if shape else 1


def _mm(shapes: list[Shape | None]) -> float:
    a, b = shapes[0], shapes[1]
    if a is None or b is None or len(a) != 2 or len(b) != 2:
        return 0.0
    return 2.0 * a[0] * a[1] * b[1]


def _addmm(shapes: list[Shape | None]) -> float:
    return _mm(shapes[1:3])


def _bmm(shapes: list[Shape | None]) -> float:
    a, b = shapes[0], shapes[1]
    if a is None or b is None or len(a) != 3 or len(b) != 3:
        return 0.0
    return 2.0 * a[0] * a[1] * a[2] * b[2]


def _baddbmm(shapes: list[Shape | None]) -> float:
    return _bmm(shapes[1:3])


def _matmul(shapes: list[Shape | None]) -> float:
    a, b = shapes[0], shapes[1]
    if a is None or b is None or not a or not b:
        return 0.0
    k = a[-1]
    n = b[-1] if len(b) > 1 else 1
    batch = _numel(a[:-1])
    if len(b) > 2:
        batch = max(batch, _numel(b[:-2]) * (a[-2] if len(a) > 1 else 1))
    return 2.0 * batch * k * n


def _linear(shapes: list[Shape | None]) -> float:
    x, w = shapes[0], shapes[1]
    if x is None or w is None or len(w) != 2:
        return 0.0
    return 2.0 * _numel(x[:-1]) * w[1] * w[0]


def _conv(shapes: list[Shape | None]) -> float:
    x, w = shapes[0], shapes[1]
    if x is None or w is None or len(x) < 3 or len(w) < 3:
        return 0.0
    # output spatial size is unknown without stride/padding: approximate with input's
    batch, spatial = x[0], _numel(x[2:])
    out_ch, in_per_group, kernel = w[0], w[1], _numel(w[2:])
    return 2.0 * batch * spatial * out_ch * in_per_group * kernel


def _conv_backward(shapes: list[Shape | None]) -> float:
    # grad_output, input, weight: grad wrt input and wrt weight, each as costly as forward
    return 2.0 * _conv(shapes[1:3])


def _sdpa(shapes: list[Shape | None]) -> float:
    q, k = shapes[0], shapes[1]
    if q is None or k is None or len(q) < 2 or len(k) < 2:
        return 0.0
    batch = _numel(q[:-2])
    lq, d = q[-2], q[-1]
    lk = k[-2]
    return 4.0 * batch * lq * lk * d  # QK^T and PV


def _sdpa_backward(shapes: list[Shape | None]) -> float:
    return 2.5 * _sdpa(shapes[1:3])  # grad_out first; ~2.5x forward (dQ, dK, dV, recompute)


FLOP_RULES: dict[str, Callable[[list[Shape | None]], float]] = {
    "aten::mm": _mm,
    "aten::addmm": _addmm,
    "aten::bmm": _bmm,
    "aten::baddbmm": _baddbmm,
    "aten::matmul": _matmul,
    "aten::linear": _linear,
    "aten::convolution": _conv,
    "aten::_convolution": _conv,
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


def op_flops(name: str, shapes: Sequence[Shape | None]) -> float | None:
    """FLOPs of one call, or None when the op is not a counted compute op."""
    rule = FLOP_RULES.get(name)
    if rule is None:
        return None
    try:
        return float(rule(list(shapes)))
    except (IndexError, TypeError):
        return 0.0
