import torch
from _common import step
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4)).eval()
x = torch.randn(4, 3, 16, 16)
with torch.inference_mode():
    for _ in range(30):
        model(x).softmax(-1)
        step()
print("inference done")
