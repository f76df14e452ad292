"""Shortened names: the line number always stays, kernels read as their qualified names."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernelscope.render.labels import cut_middle, key_label, located, short_kernel_name


@pytest.mark.parametrize(
    ("width", "expected"),
    [
        (80, "transformers/models/owlv2/modeling_owlv2.py:1732 forward"),
        (50, "transformers/…/modeling_owlv2.py:1732 forward"),
        (40, "…/modeling_owlv2.py:1732 forward"),
        (30, "modeling_owlv2.py:1732 forward"),
        (20, "…eling_owlv2.py:1732"),
    ],
)
def test_paths_lose_their_middle_then_the_function_never_the_line(width: int, expected: str) -> None:
    assert located("transformers/models/owlv2/modeling_owlv2.py", 1732, " forward", width) == expected


@given(
    parts=st.lists(st.text("abcxyz_.", min_size=1, max_size=30), min_size=1, max_size=8),
    line=st.integers(0, 99999),
    rest=st.text("abc ", max_size=40),
    width=st.integers(12, 120),
)
def test_located_fits_and_keeps_the_line_number(parts: list[str], line: int, rest: str, width: int) -> None:
    out = located("/".join(parts), line, rest, width)
    assert len(out) <= width
    assert f":{line}" in out


@pytest.mark.parametrize(
    ("name", "short"),
    [
        (
            "void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, c10::BFloat16, float, c10::BFloat16, "
            "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(c10::BFloat16*, c10::BFloat16 const*, int)",
            "at::native::cunn_SoftMaxForward<…SoftMaxForwardEpilogue…>",  # outer arguments too long: the telling one
        ),
        (
            "void cutlass::Kernel2<cutlass_75_tensorop_bf16_s1688gemm_bf16_256x128_tn_align1>"
            "(cutlass_75_tensorop_bf16_s1688gemm_bf16_256x128_tn_align1::Params)",
            "cutlass::Kernel2<cutlass_75_tensorop_bf16_s1688gemm_bf16_256x128_tn_align1>",
        ),
        (
            "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, "
            "c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul> >(int, "
            "at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, "
            "at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul>)",
            "at::native::vectorized_elementwise_kernel<4, BinaryFunctor<…>, array<…>>",
        ),
        (
            "std::enable_if<(((8)>(0)))&&vllm::_typeConvert<c10::BFloat16>::exists, void>::type "
            "vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, long, c10::BFloat16*, "
            "c10::BFloat16 const*, float, int, int)",
            "vllm::fused_add_rms_norm_kernel<BFloat16, 8>",
        ),
        ("Memcpy DtoH (Device -> Pageable)", "Memcpy DtoH (Device -> Pageable)"),
        ("triton_poi_fused_addmm_gelu_view_15", "triton_poi_fused_addmm_gelu_view_15"),
    ],
)
def test_kernel_names_read_as_their_qualified_names(name: str, short: str) -> None:
    assert short_kernel_name(name) == short


def test_keys_fit_their_width() -> None:
    assert key_label("line", "transformers/models/owlv2/modeling_owlv2.py:410", 30) == "…/modeling_owlv2.py:410"
    assert key_label("function", "transformers/models/owlv2/modeling_owlv2.py:forward", 30).endswith(":forward")
    assert len(key_label("kernel", "x" * 10_000, 40)) == 40
    assert cut_middle("abcdefghij", 5) == "ab…ij"


def test_plain_c_signatures_lose_their_arguments_prose_does_not() -> None:
    assert short_kernel_name("ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)") == "ncclDevKernel_Generic"
    assert short_kernel_name("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)") == (
        "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t"
    )
    assert short_kernel_name("Memcpy DtoD (Device -> Device)") == "Memcpy DtoD (Device -> Device)"


def test_clone_suffixes_go() -> None:
    name = "transformer_engine::fused_attn_rocm::populate_rng_state_kernel(long*, long const*, long) [clone .kd]"
    assert short_kernel_name(name) == "transformer_engine::fused_attn_rocm::populate_rng_state_kernel"


def test_long_template_kernels_keep_their_most_telling_argument() -> None:
    name = (
        "void ck_tile::kentry<ck_tile::gfx950_t, 2, ck_tile::FmhaBwdOGradDotOKernel<ck_tile::BlockFmhaBwdOGradDotO<"
        "ck_tile::BlockFmhaBwdOGradDotOPipelineProblem<std::bfloat16_t, std::bfloat16_t, float, 64, 128, false, "
        "ck_tile::TileFmhaBwdOGradDotOTraits<false, false, 2> >, ck_tile::BlockFmhaBwdPipelineDefaultPolicy> >, "
        "ck_tile::FmhaBwdOGradDotOKernel<ck_tile::BlockFmhaBwdOGradDotO<ck_tile::BlockFmhaBwdOGradDotOPipelineProblem<"
        "std::bfloat16_t, std::bfloat16_t, float, 64, 128, false, ck_tile::TileFmhaBwdOGradDotOTraits<false, false, "
        "2> >, ck_tile::BlockFmhaBwdPipelineDefaultPolicy> >::FmhaBwdOGradDotOBatchModeKargs>(ck_tile::"
        "FmhaBwdOGradDotOKernel<…>::FmhaBwdOGradDotOBatchModeKargs) [clone .kd]"
    )
    assert short_kernel_name(name) == "ck_tile::kentry<…FmhaBwdOGradDotOKernel…>"
