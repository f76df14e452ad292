"""Step boundaries found without the program's help.

A training or inference program has steps whether or not it calls ``kernelscope.step()``: an optimizer's
``step()`` returning (torch's global optimizer hooks), and, in a program with no optimizer, the outermost
``nn.Module`` call returning to the program's code. ``kernelscope.step()`` wins: once the program calls
it, only its calls count. Optimizer steps win over module calls: once an optimizer step has been seen,
module returns are no longer steps (an LBFGS closure's forward passes are steps until the optimizer's
own step returns). The session's plan and budget count these steps.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

SOURCES = ("optimizer", "module", "explicit")


class StepDetector:
    def __init__(self, on_step: Callable[[], None]) -> None:
        self._on_step = on_step
        self.source: str | None = None  # what the steps counted so far came from
        self._handles: list[Any] = []

    def install(self) -> None:
        from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

        self._handles = [
            register_optimizer_step_pre_hook(self._optimizer_pre),
            register_optimizer_step_post_hook(self._optimizer_post),
        ]

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def explicit(self) -> None:
        """The program called ``kernelscope.step()``."""
        self.source = "explicit"

    def _optimizer_pre(self, *_: Any) -> None:
        if self.source != "explicit":
            self.source = "optimizer"

    def _optimizer_post(self, *_: Any) -> None:
        if self.source == "optimizer":
            self._on_step()

    def outer_module_returned(self) -> None:
        if self.source in (None, "module"):
            self.source = "module"
            self._on_step()
