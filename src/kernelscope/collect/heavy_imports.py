"""Stop recording while the program imports torch.compile's machinery.

Importing ``torch._dynamo`` (which imports ``torch._inductor``) runs ~1 s of Python: every call of it
recorded by the Python tracer is ~1.5 million events and 20 s of folding. Programs import it without
compiling anything: an optimizer's constructor does (``torch._disable_dynamo``). It is not the program's
steady state, so the session stops its window when such an import begins (a finder at the head of
``sys.meta_path`` that finds nothing, only watches) and records again at the next safe point after it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

HEAVY = frozenset({"torch._dynamo", "torch._inductor"})


class HeavyImportWatch:
    def __init__(self, starting: Callable[[str], None]) -> None:
        self._starting = starting

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if name in HEAVY and name not in sys.modules:
            self._starting(name)
        return None  # finds nothing: the import goes on as it would

    def install(self) -> None:
        if not set(sys.modules) >= HEAVY:
            sys.meta_path.insert(0, self)  # type: ignore[arg-type]

    def remove(self) -> None:
        meta: list[Any] = sys.meta_path
        if self in meta:
            meta.remove(self)


def heavy_imports_done() -> bool:
    """Have the watched imports finished (a module being imported has ``__spec__._initializing`` set)?"""
    for name in HEAVY:
        mod = sys.modules.get(name)
        if mod is None or getattr(getattr(mod, "__spec__", None), "_initializing", False):
            return False
    return True
