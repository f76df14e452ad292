"""A tiny MLP trained with torch.compile on CPU, with one graph break (an ``.item()`` check).

kernelscope run --skip-first 2 examples/compiled_mlp.py   # skip the two compiling steps
kernelscope view compiled_mlp.ksprof --by line
kernelscope analyze compiled_mlp.ksprof
"""

from __future__ import annotations

import torch
from torch import nn

try:
    import kernelscope
except ImportError:  # plain `python examples/compiled_mlp.py`
    kernelscope = None


class Block(nn.Module):
    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc1(self.norm(x))
        h = self.act(h) * 0.5 + 0.1
        return x + self.fc2(h)


class MLP(nn.Module):
    def __init__(self, dim: int = 64, hidden: int = 256, depth: int = 2, classes: int = 10) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(Block(dim, hidden) for _ in range(depth))
        self.head = nn.Linear(dim, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.blocks[0](x)
        if not torch.isfinite(x).all():  # graph break: a Python branch on a tensor value
            raise FloatingPointError("activations exploded")
        for block in self.blocks[1:]:
            x = block(x)
        return self.head(x)


def main(steps: int = 8) -> None:
    torch.manual_seed(0)
    model = MLP()
    compiled = torch.compile(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(128, 64)
    y = torch.randint(0, 10, (128,))
    for _ in range(steps):
        loss = nn.functional.cross_entropy(compiled(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if kernelscope is not None:
            kernelscope.step()
    print(f"final loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
