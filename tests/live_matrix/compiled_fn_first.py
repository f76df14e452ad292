import torch
from _common import step
from torch import nn


@torch.compile
def loss_fn(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return torch.tanh(x @ w).pow(2).mean()


torch.manual_seed(0)
w = torch.randn(32, 16, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1)
x = torch.randn(64, 32)
for _ in range(20):  # the compiled function runs before any module call
    loss = loss_fn(x, w)
    opt.zero_grad()
    loss.backward()
    opt.step()
    step()
head = nn.Linear(16, 2)
print("compiled fn first done", head(x @ w).shape)
