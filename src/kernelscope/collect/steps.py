"""Step boundaries found without the program's help.

A training or inference program has steps whether or not it calls ``kernelscope.step()``: an optimizer's
``step()`` returning (torch's global optimizer hooks), and, in a program with no optimizer, the outermost
``nn.Module`` call returning to the program's code. ``kernelscope.step()`` wins: once the program calls
it, only its calls count. Optimizer steps win over module calls: once an optimizer step has been seen,
module returns are no longer steps (an LBFGS closure's forward passes are steps until the optimizer's
own step returns). When a source wins over another, the steps the other counted are dropped
(``on_restart``): they were parts of the first step of the winner (a module call, then the optimizer
step, then ``kernelscope.step()`` end one training step). The session's plan and budget count these steps.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

SOURCES = ("optimizer", "module", "explicit")


class StepDetector:
    def __init__(self, on_step: Callable[[], None], on_restart: Callable[[], None] = lambda: None) -> None:
        self._on_step = on_step
        self._on_restart = on_restart
        self.source: str | None = None  # what the steps counted so far came from
        self._pending = False  # an outer module call returned; not yet known to be a step
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

    def _adopt(self, source: str) -> None:
        if self.source != source:
            if self.source is not None:
                self._on_restart()
            self.source = source

    def explicit(self) -> None:
        """The program called ``kernelscope.step()``."""
        self._pending = False
        self._adopt("explicit")

    def _optimizer_pre(self, *_: Any) -> None:
        self._pending = False
        if self.source != "explicit":
            self._adopt("optimizer")

    def _optimizer_post(self, *_: Any) -> None:
        if self.source == "optimizer":
            self._on_step()

    def outer_module_returned(self) -> None:
        """Module returns become steps at the second one with no optimizer step between (then both count):
        a training loop's forward pass is followed by its optimizer step, an inference loop's by the next."""
        if self.source == "module":
            self._on_step()
        elif self.source is None:
            if self._pending:
                self.source = "module"
                self._on_step()
                self._on_step()
            self._pending = True
