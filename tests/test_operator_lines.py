"""The operator wrappers (collect/torch_lines.py ``OperatorLines``) are off while a library optimizer steps: its
per-parameter arithmetic runs on library lines no profile shows, and in a window each wrapped call is four events
that torch's stop pays for again. They stay on where the step runs the program's own code: a closure (LBFGS), an
optimizer written in the program."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.slow


class HandMadeSGD(torch.optim.Optimizer):  # (an optimizer written in the program's own file)
    def __init__(self, params: Any, lr: float = 0.1) -> None:
        super().__init__(params, {"lr": lr})

    @torch.no_grad()
    def step(self, closure: Any = None) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                p -= group["lr"] * p.grad


def _wrapped() -> bool:
    return type(torch.Tensor.__dict__.get("__iadd__")).__name__ == "function"  # (torch's own: a C slot)


def test_operator_wrappers_are_off_inside_a_library_optimizers_step_only() -> None:
    from torch.optim.optimizer import register_optimizer_step_pre_hook

    from kernelscope.collect.torch_live import Session

    seen: list[tuple[str, bool]] = []
    s = Session(compile_capture=False, max_overhead=0)
    s.start()
    handle = register_optimizer_step_pre_hook(lambda opt, args, kwargs: seen.append((type(opt).__name__, _wrapped())))
    try:
        layer = torch.nn.Linear(4, 1)
        x, y = torch.ones(8, 4), torch.zeros(8, 1)
        for opt in (
            torch.optim.AdamW(layer.parameters()),
            HandMadeSGD(layer.parameters()),
            torch.optim.LBFGS(layer.parameters(), max_iter=2),
        ):
            for _ in range(2):
                assert _wrapped()

                def closure(opt: Any = opt) -> Any:
                    opt.zero_grad()
                    loss = ((layer(x) - y) ** 2).mean()
                    loss.backward()
                    return loss

                if isinstance(opt, torch.optim.LBFGS):
                    opt.step(closure)
                else:
                    closure()
                    opt.step()
                assert _wrapped()  # (back after the step)
    finally:
        handle.remove()
        s.finalize()
    assert not _wrapped()  # (the session's end restores torch's own)
    assert seen == [("AdamW", False)] * 2 + [("HandMadeSGD", True)] * 2 + [("LBFGS", True)] * 2, seen


def test_an_optimizer_step_that_raises_leaves_the_wrappers_off_only_until_the_next_module_call() -> None:
    from torch.optim.optimizer import register_optimizer_step_pre_hook

    from kernelscope.collect.torch_live import Session

    def refuse(opt: Any, args: Any, kwargs: Any) -> None:
        raise RuntimeError("planted: the step fails after the wrappers went off")

    s = Session(compile_capture=False, max_overhead=0)
    s.start()
    handle = register_optimizer_step_pre_hook(refuse)
    try:
        layer = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(layer.parameters(), lr=0.1)
        layer(torch.ones(2, 4)).sum().backward()
        with pytest.raises(RuntimeError, match="planted"):
            opt.step()
        assert not _wrapped()  # (no post hook ran)
        layer(torch.ones(2, 4))
        assert _wrapped()
    finally:
        handle.remove()
        s.finalize()


def test_an_operator_the_program_patches_itself_stays_its_own() -> None:
    """The wrappers go off and on at each step: never over what the program put on torch.Tensor since."""
    from kernelscope.collect.torch_live import Session

    s = Session(compile_capture=False, max_overhead=0)
    s.start()
    own = torch.Tensor.__dict__.get("__xor__")

    def programs_xor(a: Any, b: Any) -> Any:
        return torch.logical_xor(a, b)

    try:
        torch.Tensor.__xor__ = programs_xor  # type: ignore[method-assign,assignment]
        layer = torch.nn.Linear(4, 1)
        opt = torch.optim.AdamW(layer.parameters())
        for _ in range(3):
            layer(torch.ones(2, 4)).sum().backward()
            opt.step()
            assert torch.Tensor.__dict__["__xor__"] is programs_xor
        s.finalize()
        assert torch.Tensor.__dict__["__xor__"] is programs_xor
        assert _wrapped() is False
    finally:
        if own is None:
            del torch.Tensor.__xor__
        else:
            torch.Tensor.__xor__ = own  # type: ignore[method-assign]
