"""Small Triton kernels for ``kernelscope triton`` (runs on CPU with the Triton interpreter).

    kernelscope triton examples/triton_kernels.py            # every kernel below, then the summary
    kernelscope triton examples/triton_kernels.py add rows   # only some of them
    kernelscope triton --json examples/triton_kernels.py oob

``oob``, ``race`` and ``strided`` are deliberately wrong: the inspector reports them. ``add`` carries a
Proton-style ``launch_metadata`` callback (name, flops, bytes) that kernelscope records per launch.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("TRITON_INTERPRET", "1")  # no GPU needed

import torch
import triton
import triton.language as tl


def add_metadata(grid, metadata, args):
    n = args["n"]
    return {"name": f"vec_add n={n}", "flops": n, "bytes": 3 * n * args["x_ptr"].element_size()}


@triton.jit(launch_metadata=add_metadata)
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@triton.jit
def rows_kernel(x_ptr, out_ptr, R, C, stride, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.arange(0, BLOCK_C)
    mask = (rows[:, None] < R) & (cols[None, :] < C)
    offs = rows[:, None] * stride + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x * 2.0, mask=mask)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


@triton.jit
def oob_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs <= n  # off by one: lets element n through
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + 1.0, mask=mask)


@triton.jit
def race_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * (BLOCK - 1) + tl.arange(0, BLOCK)  # neighbouring programs overlap by one element
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


@triton.jit
def strided_kernel(x_ptr, out_ptr, n, STRIDE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * STRIDE, mask=mask)  # uses one element in STRIDE
    tl.store(out_ptr + offs, x, mask=mask)


@triton.jit
def sum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.atomic_add(out_ptr, tl.sum(x))  # every program adds to out[0]: atomics, so no race


def add(n: int = 1000, block: int = 256) -> torch.Tensor:
    x, y = torch.rand(n), torch.rand(n)
    out = torch.empty(n)
    add_kernel[(triton.cdiv(n, block),)](x, y, out, n, BLOCK=block)
    assert torch.allclose(out, x + y)
    return out


def rows(r: int = 10, c: int = 100) -> torch.Tensor:
    x = torch.rand(r, c)
    out = torch.empty_like(x)
    rows_kernel[(triton.cdiv(r, 4),)](x, out, r, c, x.stride(0), BLOCK_R=4, BLOCK_C=triton.next_power_of_2(c))
    assert torch.allclose(out, x * 2)
    return out


def matmul(m: int = 48, n: int = 32, k: int = 64) -> torch.Tensor:
    a, b = torch.rand(m, k), torch.rand(k, n)
    c = torch.empty(m, n)
    matmul_kernel[(m // 16, n // 16)](a, b, c, m, n, k, BLOCK_M=16, BLOCK_N=16, BLOCK_K=32)
    assert torch.allclose(c, a @ b, atol=1e-4)
    return c


def oob(n: int = 1000, block: int = 256) -> torch.Tensor:
    x = torch.rand(n)
    out = torch.empty(n)
    oob_kernel[(triton.cdiv(n, block),)](x, out, n, BLOCK=block)
    return out


def race(n: int = 100, block: int = 32) -> torch.Tensor:
    x = torch.rand(n)
    out = torch.empty(n)
    race_kernel[(triton.cdiv(n, block - 1),)](x, out, n, BLOCK=block)
    return out


def strided(n: int = 512, stride: int = 4, block: int = 128) -> torch.Tensor:
    x = torch.rand(n * stride)
    out = torch.empty(n)
    strided_kernel[(triton.cdiv(n, block),)](x, out, n, STRIDE=stride, BLOCK=block)
    assert torch.equal(out, x[::stride])
    return out


def total(n: int = 1000, block: int = 256) -> torch.Tensor:
    x = torch.rand(n)
    out = torch.zeros(1)
    sum_kernel[(triton.cdiv(n, block),)](x, out, n, BLOCK=block)
    assert torch.allclose(out, x.sum().reshape(1), rtol=1e-4)
    return out


DEMOS = {"add": add, "rows": rows, "matmul": matmul, "oob": oob, "race": race, "strided": strided, "sum": total}

if __name__ == "__main__":
    for name in sys.argv[1:] or list(DEMOS):
        DEMOS[name]()
