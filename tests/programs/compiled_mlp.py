"""A torch.compile MLP trained 30 steps, written the way the tutorials do: no kernelscope.step().

``python compiled_mlp.py --chrome-trace TRACE.json``: the same program profiled the way torch.profiler's recipe
does it (CPU activity, shapes and stacks, after a first step that compiles), its trace exported for chrome.
"""

import sys

import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU(), nn.Linear(256, 10))

    def forward(self, x):
        return self.layers(x)


def train(cmodel, opt, x, y, steps):
    for _ in range(steps):
        loss = nn.functional.cross_entropy(cmodel(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss


def main(trace=None) -> None:
    torch.manual_seed(0)
    model = MLP()
    cmodel = torch.compile(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(64, 64)
    y = torch.randint(0, 10, (64,))
    if trace is None:
        loss = train(cmodel, opt, x, y, 30)
    else:
        from torch.profiler import ProfilerActivity, profile

        train(cmodel, opt, x, y, 1)  # the first step compiles
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_stack=True) as prof:
            loss = train(cmodel, opt, x, y, 29)
        prof.export_chrome_trace(trace)
    print("loss", float(loss))


if __name__ == "__main__":
    main(sys.argv[2] if sys.argv[1:2] == ["--chrome-trace"] else None)
