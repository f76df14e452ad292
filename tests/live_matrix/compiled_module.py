import torch
from _common import step
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
cmodel = torch.compile(model)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(32, 64)
for _ in range(20):
    loss = cmodel(x).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    step()
print("compiled module done")
