import torch
from _common import step
from torch import nn
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(nn.Sequential(nn.Linear(32, 32), nn.GELU()) for _ in range(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for b in self.blocks:
            x = checkpoint(b, x, use_reentrant=False)
        return x


net = Net()
opt = torch.optim.SGD(net.parameters(), lr=0.01)
x = torch.randn(8, 32, requires_grad=True)
for _ in range(20):
    loss = net(x).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    step()
print("checkpointing done")
