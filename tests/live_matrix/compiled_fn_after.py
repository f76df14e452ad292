import torch
from _common import step
from torch import nn

torch.manual_seed(0)
enc = nn.Linear(32, 32)


@torch.compile
def mix(h: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.silu(h) * h.sigmoid()


opt = torch.optim.SGD(enc.parameters(), lr=0.01)
x = torch.randn(64, 32)
for _ in range(20):  # a module call, then the compiled function
    loss = mix(enc(x)).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    step()
print("compiled fn after done")
