import torch
from _common import step
from torch import nn
from torch.profiler import ProfilerActivity, profile

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(16, 32)


def train_step() -> None:
    loss = model(x).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    step()


for _ in range(5):
    train_step()
with profile(activities=[ProfilerActivity.CPU]) as prof:  # the program profiles some steps itself
    for _ in range(5):
        train_step()
        prof.step()
for _ in range(5):
    train_step()
print("own profiler saw", len(prof.key_averages()) > 0)
