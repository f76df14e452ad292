"""place_compiled_kernel from literal origins: where fused kernels go and how parts split their time."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kernelscope.attribute.compiled import FusedOrigin, common_prefix, place_compiled_kernel, split_exact
from kernelscope.model import Frame

TOP = Frame.python("model.py", 34, "forward")
L27 = Frame.python("model.py", 27, "forward")
L28 = Frame.python("model.py", 28, "forward")
ACT = Frame.module_("blocks.0.act", "GELU")
BLOCK = Frame.module_("blocks.0", "Block")
KERNEL = Frame.kernel("graph_0_cpp_fused_add_gelu_mul_0")


def origin(
    op: str,
    stack: tuple[Frame, ...],
    module: Frame | None,
    *,
    nbytes: float = 0.0,
    flops: float = 0.0,
    backward: bool = False,
) -> FusedOrigin:
    return FusedOrigin(op, stack, module, backward, flops, nbytes)


def test_single_line_kernel_has_no_parts() -> None:
    # given: two decomposed nodes of one gelu, same line and module
    origins = [origin("aten::gelu", (TOP, L27), ACT, nbytes=100), origin("aten::gelu", (TOP, L27), ACT, nbytes=50)]
    # when
    placed = place_compiled_kernel(KERNEL, origins, {"time_ns": 1000.0, "count": 1.0})
    # then
    assert placed == [([TOP, L27, ACT, KERNEL], {"time_ns": 1000.0, "count": 1.0})]


def test_fused_lines_go_under_common_prefix_with_parts() -> None:
    origins = [
        origin("aten::gelu", (TOP, L27), ACT, nbytes=300),
        origin("aten::mul", (TOP, L28), BLOCK, nbytes=100),
        origin("aten::add", (TOP, L28), BLOCK, nbytes=100),
    ]
    placed = place_compiled_kernel(KERNEL, origins, {"time_ns": 1000.0, "cpu_time_ns": 999.0, "count": 1.0})
    assert placed == [
        ([TOP, KERNEL], {"count": 1.0}),
        (
            [TOP, KERNEL, Frame.part("aten::gelu", "model.py", 27, "blocks.0.act")],
            {"time_ns": 600.0, "cpu_time_ns": 599.0},
        ),
        ([TOP, KERNEL, Frame.part("aten::mul", "model.py", 28, "blocks.0")], {"time_ns": 200.0, "cpu_time_ns": 200.0}),
        ([TOP, KERNEL, Frame.part("aten::add", "model.py", 28, "blocks.0")], {"time_ns": 200.0, "cpu_time_ns": 200.0}),
    ]


def test_backward_kernel_sits_in_backward_frame_under_forward_lines() -> None:
    origins = [origin("aten::gelu_backward", (TOP, L27), ACT, nbytes=1, backward=True)]
    placed = place_compiled_kernel(KERNEL, origins, {"time_ns": 10.0})
    assert placed == [([TOP, L27, ACT, Frame.backward(), KERNEL], {"time_ns": 10.0})]


def test_flops_from_origins_are_added_when_the_collector_has_none() -> None:
    origins = [origin("aten::addmm", (TOP,), None, flops=8192.0, nbytes=10)]
    placed = place_compiled_kernel(Frame.op("aten::addmm"), origins, {"time_ns": 5.0})
    assert placed == [([TOP, Frame.op("aten::addmm")], {"time_ns": 5.0, "flops": 8192.0})]


def test_no_origins_keeps_the_kernel_alone() -> None:
    assert place_compiled_kernel(KERNEL, [], {"time_ns": 5.0}) == [([KERNEL], {"time_ns": 5.0})]


def test_zero_weights_split_equally() -> None:
    origins = [origin("aten::expand", (L27,), None), origin("aten::view", (L28,), None)]
    placed = place_compiled_kernel(KERNEL, origins, {"time_ns": 4.0})
    assert [m["time_ns"] for _, m in placed] == [2.0, 2.0]


def test_common_prefix() -> None:
    assert common_prefix([(TOP, L27, ACT), (TOP, L28, BLOCK)]) == (TOP,)
    assert common_prefix([(TOP, L27), (TOP, L27, ACT)]) == (TOP, L27)
    assert common_prefix([(L27,), (L28,)]) == ()
    assert common_prefix([]) == ()


@given(
    total=st.integers(min_value=0, max_value=10**15),
    weights=st.lists(st.floats(min_value=0, max_value=1e9, allow_nan=False), min_size=1, max_size=12),
)
def test_parts_sum_exactly_to_the_kernel(total: int, weights: list[float]) -> None:
    # nanoseconds are integers: the split is exact
    shares = split_exact(float(total), weights)
    assert sum(shares) == total
    assert all(s >= 0 and s.is_integer() for s in shares)


@given(
    total=st.floats(min_value=0, max_value=1e12, allow_nan=False),
    weights=st.lists(st.floats(min_value=0, max_value=1e9, allow_nan=False), min_size=1, max_size=12),
)
def test_fractional_totals_split_without_negative_parts(total: float, weights: list[float]) -> None:
    shares = split_exact(total, weights)
    assert all(s >= 0 for s in shares)
    assert abs(sum(shares) - total) <= 1e-9 * max(total, 1.0)
