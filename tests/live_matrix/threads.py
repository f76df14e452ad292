import threading

import torch
from _common import step
from torch import nn

torch.manual_seed(0)
model = nn.Linear(32, 32)
x = torch.randn(8, 32)


def worker() -> None:
    with torch.no_grad():
        for _ in range(50):
            model(x).relu()


t = threading.Thread(target=worker)
t.start()
t.join()
for _ in range(10):
    model(x).sum().backward()
    step()
print("threads done")
