"""A Hugging Face ``TrainerCallback``: ``Trainer(..., callbacks=[KernelscopeCallback("train.ksprof")])``.

Recording starts when training starts, each optimizer step (``on_step_end``) is a kernelscope step, and the
profile is written when training ends; ``options`` are ``kernelscope.profile()``'s (``max_overhead``, ``steps``,
``skip_first``, ``shapes``, ...). After training, ``.result`` holds it.
"""

from __future__ import annotations

from typing import Any

from transformers import TrainerCallback

from ._session import SessionResults, TrainerSession


class KernelscopeCallback(SessionResults, TrainerCallback):  # type: ignore[misc]
    def __init__(self, path: str = "trainer.ksprof", **options: Any) -> None:
        self._session = TrainerSession(path, options, "transformers.Trainer")

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._session.begin(getattr(args, "local_rank", None) if getattr(args, "local_rank", -1) >= 0 else None)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._session.step()

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._session.end()


__all__ = ["KernelscopeCallback"]
