"""A small model step with one deliberately slow line (the planted line for agents and scripts).

kernelscope run examples/slow_line.py                  # the tree; slow_line.ksprof saved
kernelscope view slow_line.ksprof --by line            # the line marked SLOW tops the list
kernelscope mcp                                        # ask the same from an agent (docs/agents.md)

The model is cheap everywhere except one line in ``Denoise.forward``, which recomputes a large
matrix product on every call although its result does not depend on the input.
"""

from __future__ import annotations

import torch
from torch import nn


class Denoise(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.basis = torch.randn(384, 384)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.proj(x))
        mix = (self.basis @ self.basis @ self.basis).diagonal()[: x.shape[-1]]  # SLOW: constant, recomputed per call
        return h * mix + x


def main() -> None:
    torch.manual_seed(0)
    model = Denoise(64)
    x = torch.randn(32, 64)
    with torch.no_grad():
        for _ in range(20):
            x = model(x).tanh()
    print(f"checksum {float(x.sum()):.4f}")


if __name__ == "__main__":
    main()
