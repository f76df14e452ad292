"""Step boundaries found without the program's help.

A training or inference program has steps whether or not it calls ``kernelscope.step()``: an optimizer's
``step()`` returning (torch's global optimizer hooks), and, in a program with no optimizer, the call of its step
module: the first module the program calls (as an outermost call, not from inside another module) a second time.
A step runs from one call of it to the next, so it holds that call's forward, what the program does with the
output (a loss module, backward(), a hand-written update) and nothing of the next call's: a boundary at the
module's return would cut each forward from its backward (a loop with no optimizer object, as pytorch/examples'
word_language_model, read two "steps" an iteration, a loss module's call being the second, and each held one
iteration's backward with the next one's forward). Other outermost modules (a loss, a discriminator) are parts
of the step. ``kernelscope.step()`` wins: once the program calls it, only its calls count. Optimizer steps win
over module calls: once an optimizer step has been seen, module calls are no longer steps (an LBFGS closure's
forward passes are steps until the optimizer's own step returns). When a source wins over another, the steps the
other counted are dropped (``on_restart``): they were parts of the first step of the winner (module calls, then
the optimizer step, then ``kernelscope.step()`` end one training step). The session's plan and budget count
these steps.
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
        self._outer: set[int] = set()  # the modules called as outermost calls so far (ids), until one repeats
        self._module: int | None = None  # the step module, once one has
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
        self._adopt("explicit")

    def _optimizer_pre(self, *_: Any) -> None:
        if self.source != "explicit":
            self._adopt("optimizer")

    def _optimizer_post(self, *_: Any) -> None:
        if self.source == "optimizer":
            self._on_step()

    def outer_module_called(self, module: int) -> None:
        """An outermost module call begins (``module``: its id). The first module called a second time is the
        step module: that call ends the first step (set-up and the first call are what ran before it), and each
        later call of it ends one more."""
        if self.source == "module":
            if module == self._module:
                self._on_step()
        elif self.source is None:
            if module in self._outer:
                self.source, self._module = "module", module
                self._outer.clear()
                self._on_step()
            elif len(self._outer) < 64:  # (a program that calls many modules once each: its set-up)
                self._outer.add(module)
