"""Peak FLOP/s and memory bandwidth of common GPUs, keyed by the device name a trace records.

Dense (no 2:4 sparsity) vendor peaks at boost clock, in TFLOP/s, and HBM/GDDR bandwidth in TB/s.
Sources (vendor datasheets; sparse figures halved where a datasheet quotes only sparse ones):
- NVIDIA H100 Tensor Core GPU datasheet (SXM5 and PCIe columns); H200 datasheet (H100 SXM compute,
  141 GB HBM3e at 4.8 TB/s); HGX B200 datasheet (per GPU: FP32 80, TF32 1.1 P, BF16 2.25 P, FP8 4.5 P
  dense, 8 TB/s).
- NVIDIA A100 datasheet (FP32 19.5, TF32 156, BF16/FP16 312; 40 GB 1,555 GB/s, 80 GB SXM 2,039 GB/s);
  V100 SXM2 datasheet (FP32 15.7, FP16 tensor 125, 900 GB/s); T4 (FP32 8.1, FP16 65, 320 GB/s);
  A10 (FP32 31.2, TF32 62.5, BF16 125, 600 GB/s); L4 (FP32 30.3, TF32 60, BF16 121, 300 GB/s);
  L40S (FP32 91.6, TF32 183, BF16 362, 864 GB/s).
- AMD Instinct MI300X datasheet (FP32 163.4, TF32 653.7, BF16/FP16 1,307.4, FP8 2,614.9; 5.3 TB/s);
  MI325X (MI300X compute, 6 TB/s); MI250X (FP32 matrix 95.7, BF16/FP16 383; 3.2 TB/s).
A device whose name matches none of these gets no roofline: kernelscope does not guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ...model.devices import devices_of


@dataclass(frozen=True)
class DevicePeak:
    name: str  # the table's name for it
    fp32: float  # TFLOP/s without tensor cores
    tf32: float  # TFLOP/s, fp32 inputs on tensor/matrix cores (fp32 where there are none)
    bf16: float  # TFLOP/s, fp16/bf16 tensor/matrix cores
    fp8: float  # TFLOP/s (bf16 where there is no fp8)
    bandwidth: float  # TB/s

    def peak_flops(self, dtype: str | None) -> float:
        """FLOP/s for a dtype named as :func:`kernel_dtype` names it; fp32 (the lowest roof) when unknown."""
        return {"bf16": self.bf16, "fp16": self.bf16, "tf32": self.tf32, "fp8": self.fp8}.get(
            dtype or "", self.fp32
        ) * 1e12


# (pattern on the device name, memory at least this many GB or 0, peaks); first match wins
_TABLE: tuple[tuple[str, float, DevicePeak], ...] = (
    (r"H200", 0, DevicePeak("H200", 67.0, 494.7, 989.4, 1978.9, 4.8)),
    (r"H100.*(PCIe|PCI)", 0, DevicePeak("H100 PCIe", 51.0, 378.0, 756.0, 1513.0, 2.0)),
    (r"H100|GH100|H800", 0, DevicePeak("H100 SXM", 67.0, 494.7, 989.4, 1978.9, 3.35)),
    (r"B200|GB200", 0, DevicePeak("B200", 80.0, 1100.0, 2250.0, 4500.0, 8.0)),
    (r"A100|A800", 60, DevicePeak("A100 80GB", 19.5, 156.0, 312.0, 312.0, 2.039)),
    (r"A100|A800", 0, DevicePeak("A100 40GB", 19.5, 156.0, 312.0, 312.0, 1.555)),
    (r"L40S", 0, DevicePeak("L40S", 91.6, 183.0, 362.0, 733.0, 0.864)),
    (r"\bL4\b", 0, DevicePeak("L4", 30.3, 60.0, 121.0, 242.0, 0.3)),
    (r"A10G?\b", 0, DevicePeak("A10", 31.2, 62.5, 125.0, 125.0, 0.6)),
    (r"V100", 0, DevicePeak("V100", 15.7, 15.7, 125.0, 125.0, 0.9)),
    (r"\bT4\b", 0, DevicePeak("T4", 8.1, 8.1, 65.0, 65.0, 0.32)),
    (r"MI325X", 0, DevicePeak("MI325X", 163.4, 653.7, 1307.4, 2614.9, 6.0)),
    (r"MI300X", 0, DevicePeak("MI300X", 163.4, 653.7, 1307.4, 2614.9, 5.3)),
    (r"MI250X?", 0, DevicePeak("MI250X", 95.7, 95.7, 383.0, 383.0, 3.2)),
)


def device_peak(profile_metadata: dict[str, Any]) -> tuple[str, DevicePeak] | None:
    """The first recorded GPU that the table knows: (its recorded name, its peaks)."""
    for d in devices_of(profile_metadata):
        if not d.name:
            continue
        name = d.name
        mem_gb = d.memory_bytes / 1e9
        for pattern, min_gb, peak in _TABLE:
            if re.search(pattern, name, re.IGNORECASE) and (not min_gb or mem_gb >= min_gb):
                return name, peak
    return None


# kernel-name evidence of the element type, most specific first (cuBLAS/CUTLASS/cuDNN, Tensile, Triton)
_DTYPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("fp8", re.compile(r"e4m3|e5m2|fp8|f8f8", re.IGNORECASE)),
    ("bf16", re.compile(r"bf16|bfloat16|_BBS_|_BSS_", re.IGNORECASE)),
    ("fp16", re.compile(r"f16|fp16|half|hgemm|h\d{4}gemm|_HHS_|_HSS_", re.IGNORECASE)),
    ("tf32", re.compile(r"tf32|tensorop_s\d{4}|xf32", re.IGNORECASE)),
    ("fp32", re.compile(r"sgemm|_SS_|f32f32_f32", re.IGNORECASE)),
)
ELEMENT_BYTES = {"fp8": 1, "bf16": 2, "fp16": 2, "tf32": 4, "fp32": 4}


def kernel_dtype(name: str) -> str | None:
    for dtype, pattern in _DTYPES:
        if pattern.search(name):
            return dtype
    return None
