"""A training loop of very short steps: a 64-wide linear layer, SGD, ~2 ms a step on a 2-core CPU (~340 of torch's
events a step). Recording it costs several times its own time a second recorded, more on its steps than on its
set-up: the default's own cost can run past its grace on it (known, not fixed: benchmarks/README.md).
``python benchmarks/tiny_steps.py [STEPS]``"""

from __future__ import annotations

import sys

import torch


def main(steps: int) -> None:
    torch.manual_seed(0)
    model = torch.nn.Linear(64, 64)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(32, 64)
    for _ in range(steps):
        model(x).sum().backward()
        opt.step()
        opt.zero_grad()
    print(f"trained {steps} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2500)
