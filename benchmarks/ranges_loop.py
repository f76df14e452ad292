"""A training loop whose every step runs inside ``record_function`` ranges (the whole run in one, each step in
another), as programs that label their steps for torch.profiler do. ``kernelscope run benchmarks/ranges_loop.py
[STEPS]``: the header says how many steps were recorded whole; ``recording.deferred_window_changes`` in the
profile's metadata counts the turnovers that had to wait."""

import sys

import torch
from torch import nn
from torch.autograd.profiler import record_function


def main(steps: int) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 256))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(64, 256)
    with record_function("whole#run"):
        for _ in range(steps):
            with record_function("step#one"):
                loss = model(x).pow(2).mean()
                loss.backward()
                opt.step()
                opt.zero_grad()
    print("done")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 400)
