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
import re
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


def _flash(shapes: Sequence[Any], concrete: Sequence[Any]) -> float:
    """``_flash_attention_forward(q, k, ...)``: q is (batch, seq, heads, dim), unlike SDPA's (batch, heads,
    seq, dim): the kernel-level ops see the transposed layout."""
    q, k = _shape(shapes, 0), _shape(shapes, 1)
    if q is None or k is None or len(q) != 4 or len(k) != 4:
        return _sdpa(shapes, concrete)
    b, lq, h, d = q
    return 4.0 * b * h * lq * k[1] * d


def _flash_backward(shapes: Sequence[Any], concrete: Sequence[Any]) -> float:
    return 2.5 * _flash(shapes[1:3], ())  # (grad_out, q, k, ...)


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
    "aten::_flash_attention_forward": _flash,
    "aten::_scaled_dot_product_flash_attention_for_cpu_backward": _sdpa_backward,
    "aten::_scaled_dot_product_flash_attention_backward": _sdpa_backward,
    "aten::_scaled_dot_product_efficient_attention_backward": _sdpa_backward,
    "aten::_flash_attention_backward": _flash_backward,
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


# --- bytes: the data an op reads and writes ------------------------------------------------------
# Ops that move no data: views, metadata, allocation without initialisation.
NO_TRAFFIC = frozenset(
    {
        "aten::view",
        "aten::_unsafe_view",
        "aten::as_strided",
        "aten::t",
        "aten::transpose",
        "aten::permute",
        "aten::expand",
        "aten::expand_as",
        "aten::reshape",
        "aten::squeeze",
        "aten::unsqueeze",
        "aten::slice",
        "aten::select",
        "aten::narrow",
        "aten::split",
        "aten::split_with_sizes",
        "aten::chunk",
        "aten::unbind",
        "aten::unflatten",
        "aten::flatten",
        "aten::diagonal",
        "aten::alias",
        "aten::detach",
        "aten::detach_",
        "detach",
        "aten::lift_fresh",
        "aten::resolve_conj",
        "aten::resolve_neg",
        "aten::empty",
        "aten::empty_like",
        "aten::empty_strided",
        "aten::new_empty",
        "aten::new_empty_strided",
        "aten::result_type",
        "aten::is_nonzero",
        "aten::size",
        "aten::stride",
        "aten::numel",
        "aten::dim",
    }
)
# Reductions write a small result: their traffic is what they read.
REDUCTIONS = frozenset(
    {
        "aten::sum",
        "aten::mean",
        "aten::amax",
        "aten::amin",
        "aten::max",
        "aten::min",
        "aten::argmax",
        "aten::argmin",
        "aten::prod",
        "aten::norm",
        "aten::linalg_vector_norm",
        "aten::var",
        "aten::std",
        "aten::all",
        "aten::any",
        "aten::_local_scalar_dense",
        "aten::item",
        "aten::nll_loss",
        "aten::nll_loss_forward",
        "aten::mse_loss",
    }
)
# In-place ops that overwrite their first input without reading it
OVERWRITES = frozenset({"aten::copy_", "aten::fill_", "aten::zero_", "aten::normal_", "aten::uniform_"})
_AUTOGRAD_NODE = re.compile(r"Backward\d*$")
# Kineto's "Input type" names -> bytes per element
ITEMSIZE = {
    "float": 4,
    "double": 8,
    "c10::Half": 2,
    "c10::BFloat16": 2,
    "long int": 8,
    "long": 8,
    "int": 4,
    "short int": 2,
    "short": 2,
    "signed char": 1,
    "unsigned char": 1,
    "bool": 1,
    "c10::complex<float>": 8,
    "c10::complex<double>": 16,
    "c10::complex<c10::Half>": 4,
    "c10::Float8_e4m3fn": 1,
    "c10::Float8_e5m2": 1,
    "c10::Float8_e4m3fnuz": 1,
    "c10::Float8_e5m2fnuz": 1,
}


def _gemm_out(name: str, shapes: Sequence[Any]) -> float | None:
    """Elements a GEMM-like op writes."""
    if name in ("aten::mm", "aten::bmm", "aten::matmul"):
        a, b = _shape(shapes, 0), _shape(shapes, 1)
        if a and b:
            return float(math.prod(a[:-1]) * (b[-1] if len(b) > 1 else 1))
    elif name in ("aten::addmm", "aten::baddbmm"):
        a, b = _shape(shapes, 1), _shape(shapes, 2)
        if a and b:
            return float(math.prod(a[:-1]) * b[-1])
    elif name == "aten::linear":
        x, w = _shape(shapes, 0), _shape(shapes, 1)
        if x and w:
            return float(math.prod(x[:-1]) * w[0])
    return None


def op_bytes(name: str, shapes: Sequence[Any], itemsizes: Sequence[int]) -> float | None:
    """Bytes one call reads and writes, from its input shapes and element sizes (one rule for live runs
    and imports); None when the op recorded no tensor input (its inner ops are measured instead).

    Reads are the tensor inputs; writes are the output: a GEMM's result, an in-place op's first input
    (written once), a reduction's nothing worth counting, otherwise the largest input (elementwise and
    broadcasting ops). Views and allocations move nothing."""
    if name in NO_TRAFFIC:
        return 0.0
    if name.startswith("torch::autograd::") or _AUTOGRAD_NODE.search(name):
        return None  # an autograd node: the ops it runs are the traffic
    sizes: list[float] = []
    first = 0.0
    joined = 0.0  # cat/stack write their whole input list
    for i, s in enumerate(shapes):
        isz = itemsizes[i] if i < len(itemsizes) else 0
        if not isz:
            continue
        parts = s if isinstance(s, (list, tuple)) and s and isinstance(s[0], (list, tuple)) else [s]
        for part in parts:
            if isinstance(part, (list, tuple)) and all(type(d) is int and d >= 0 for d in part):
                nbytes = float(math.prod(part) * isz)
                if not sizes:
                    first = nbytes
                if i == 0:
                    joined += nbytes
                sizes.append(nbytes)
    if not sizes:
        return None
    reads = sum(sizes)
    if name in OVERWRITES and len(sizes) > 1:
        reads -= first  # copy_(dst, src): the destination is written, not read
    out = _gemm_out(name, shapes)
    if out is not None:
        writes = out * (itemsizes[0] if itemsizes and itemsizes[0] else 4)
    elif name in ("aten::cat", "aten::stack", "aten::_cat"):
        writes = joined
    elif name.endswith("_") and not name.endswith("__"):
        writes = first
    elif name in REDUCTIONS:
        writes = 0.0
    else:
        writes = max(sizes)
    total = reads + writes
    return total if math.isfinite(total) and total < 9e18 else 0.0
