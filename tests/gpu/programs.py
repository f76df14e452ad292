"""GPU programs for tests/gpu, run as scripts: ``python programs.py eager|compiled|cudagraph|overhead``."""

import sys
import time

import torch
from torch import nn


def model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024)).cuda()


def train(m: nn.Module, steps: int) -> None:
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
    x = torch.randn(256, 1024, device="cuda")
    for _ in range(steps):
        loss = m(x).square().mean()  # the line the kernels must land on
        opt.zero_grad()
        loss.backward()
        opt.step()
    torch.cuda.synchronize()


def main(which: str) -> None:
    if which == "eager":
        train(model(), 20)
    elif which == "compiled":
        train(torch.compile(model()), 20)
    elif which == "cudagraph":
        m = model()
        torch.compile(m, mode="reduce-overhead")  # warms the CUDA-graph trees path below
        g = torch.cuda.CUDAGraph()
        x = torch.randn(256, 1024, device="cuda")
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s), torch.no_grad():
            for _ in range(3):
                m(x)
        torch.cuda.current_stream().wait_stream(s)
        with torch.cuda.graph(g), torch.no_grad():
            y = m(x)  # captured here
        for _ in range(20):
            g.replay()  # replayed here
        torch.cuda.synchronize()
        print(float(y.sum()))
    elif which == "overhead":
        m = model()
        t = time.perf_counter()
        train(m, 200)
        print(f"steps_s {time.perf_counter() - t:.4f}")


if __name__ == "__main__":
    main(sys.argv[1])
