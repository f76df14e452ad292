import torch
from _common import step

torch.manual_seed(0)
a = torch.randn(16, 16)
v = torch.randn(16)
i = 0
while i < 400:  # no module, no optimizer: power iteration
    v = a @ v
    v = v / v.norm()
    i += 1
    if i % 20 == 0:
        step()
print("while loop done", float(v.sum()))
