"""A two-rank DistributedDataParallel job (gloo, CPU) training ``train_nanogpt.py``'s model for 20 steps: the
issue-24 torchrun case, run with the default options as a user would:

    MASTER_ADDR=127.0.0.1 torchrun --nproc-per-node 2 --no-python kernelscope run --no-view -o ddp.ksprof \\
        benchmarks/ddp_nanogpt.py

Each rank's header says how many of its 20 steps it recorded whole (``ddp.ranks/ddp.rank<R>.ksprof``).
"""

from __future__ import annotations

import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_nanogpt import NanoGPT


def main(steps: int = 20) -> None:
    dist.init_process_group("gloo")
    torch.manual_seed(dist.get_rank())
    torch.set_num_threads(1)
    model = DistributedDataParallel(NanoGPT())
    opt = torch.optim.AdamW(model.parameters(), lr=6e-4)
    data = torch.randint(0, 256, (50_000,))
    for _ in range(steps):
        ix = torch.randint(0, len(data) - 65, (8,))
        x = torch.stack([data[i : i + 64] for i in ix])
        y = torch.stack([data[i + 1 : i + 65] for i in ix])
        loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
