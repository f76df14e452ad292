"""A two-rank DistributedDataParallel job on the gloo backend, as in the PyTorch DDP tutorial, launched with
``torchrun --nproc-per-node 2``."""

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class ToyModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.net1 = nn.Linear(32, 64)
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(64, 8)

    def forward(self, x):
        return self.net2(self.relu(self.net1(x)))


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(rank)
    model = ToyModel()
    ddp_model = DDP(model)
    loss_fn = nn.MSELoss()
    optimizer = torch.optim.SGD(ddp_model.parameters(), lr=0.001)
    for _ in range(10):
        optimizer.zero_grad()
        outputs = ddp_model(torch.randn(20, 32))
        labels = torch.randn(20, 8)
        loss_fn(outputs, labels).backward()
        optimizer.step()
    dist.destroy_process_group()
    print(f"rank {rank} done")


if __name__ == "__main__":
    main()
