import torch
from _common import step


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        (x,) = ctx.saved_tensors
        return 2 * x * g


torch.manual_seed(0)
w = torch.randn(64, requires_grad=True)
for _ in range(50):
    Square.apply(w).sum().backward()
    with torch.no_grad():
        w -= 0.01 * w.grad
        w.grad = None
    step()
print("custom function done")
