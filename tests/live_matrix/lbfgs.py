import torch
from _common import step
from torch import nn

torch.manual_seed(0)


class Seq(nn.Module):  # pytorch/examples' time_sequence_prediction, smaller
    def __init__(self) -> None:
        super().__init__()
        self.lstm1 = nn.LSTMCell(1, 16)
        self.linear = nn.Linear(16, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.zeros(x.size(0), 16)
        c = torch.zeros(x.size(0), 16)
        outs = []
        for t in x.split(1, dim=1):
            h, c = self.lstm1(t, (h, c))
            outs.append(self.linear(h))
        return torch.cat(outs, dim=1)


seq = Seq()
x = torch.sin(torch.arange(0, 40).float().unsqueeze(0).repeat(8, 1) / 4)
opt = torch.optim.LBFGS(seq.parameters(), lr=0.5, max_iter=8)
for _ in range(2):

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = nn.functional.mse_loss(seq(x[:, :-1]), x[:, 1:])
        loss.backward()
        return loss

    opt.step(closure)
    step()
print("lbfgs done")
