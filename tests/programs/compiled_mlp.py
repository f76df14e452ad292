"""A torch.compile MLP trained 30 steps, written the way the tutorials do: no kernelscope.step()."""

import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU(), nn.Linear(256, 10))

    def forward(self, x):
        return self.layers(x)


def main() -> None:
    torch.manual_seed(0)
    model = MLP()
    cmodel = torch.compile(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(64, 64)
    y = torch.randint(0, 10, (64,))
    for _ in range(30):
        loss = nn.functional.cross_entropy(cmodel(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print("loss", float(loss))


if __name__ == "__main__":
    main()
