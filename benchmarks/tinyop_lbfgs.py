"""A tiny-op program in the shape of pytorch/examples' time_sequence_prediction (written here, not copied):
two LSTM cells unrolled over a long sine sequence, trained with LBFGS, whose every op is tiny and whose
whole training runs inside ``optimizer.step(closure)``. ``python tinyop_lbfgs.py [STEPS]``."""

import sys

import torch
from torch import nn


class Sequence(nn.Module):
    def __init__(self, hidden: int = 51) -> None:
        super().__init__()
        self.hidden = hidden
        self.cell1 = nn.LSTMCell(1, hidden)
        self.cell2 = nn.LSTMCell(hidden, hidden)
        self.out = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.size(0)
        h1 = c1 = torch.zeros(n, self.hidden, dtype=x.dtype)
        h2 = c2 = torch.zeros(n, self.hidden, dtype=x.dtype)
        outs = []
        for xt in x.split(1, dim=1):
            h1, c1 = self.cell1(xt, (h1, c1))
            h2, c2 = self.cell2(h1, (h2, c2))
            outs.append(self.out(h2))
        return torch.cat(outs, dim=1)


def main(steps: int) -> None:
    torch.manual_seed(0)
    t = torch.arange(0, 300, dtype=torch.float64).unsqueeze(0) + torch.randint(-40, 40, (24, 1))
    data = torch.sin(t / 20.0)
    x, y = data[:, :-1], data[:, 1:]
    model = Sequence().double()
    opt = torch.optim.LBFGS(model.parameters(), lr=0.8, max_iter=6)
    loss_fn = nn.MSELoss()
    for _ in range(steps):

        def closure() -> torch.Tensor:
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            return loss

        opt.step(closure)
    with torch.no_grad():
        print("loss", float(loss_fn(model(x), y)))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
