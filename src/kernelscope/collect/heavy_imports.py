"""Stop recording while the program imports a module.

Importing a module runs its top-level code under the Python tracer: ``torch._dynamo`` (which imports
``torch._inductor``) alone is ~1.5 million events and 20 s of folding, and libraries import parts of
themselves lazily in the middle of a run (``transformers`` its loss functions at the first training step,
torch its reference implementations). None of it is the program's steady state. So a finder at the head of
``sys.meta_path`` (it finds nothing, it only watches) tells the session when an import of a module not yet
loaded begins; the session stops its window there (for an import begun inside torch code, only for torch.compile's own
machinery: elsewhere the window could not open again before that code returns), and no window opens again
until every import it saw has finished (``busy``). The time is counted apart (``coverage.import_seconds``, ``imported``).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

# Always a pause, wherever they begin: torch.compile's machinery (~1.5 million events to import). Other
# imports pause recording where a window could turn over (no torch frame that may hold its state below).
HEAVY = frozenset({"torch._dynamo", "torch._inductor"})


class ImportWatch:
    def __init__(self, starting: Callable[[str], None]) -> None:
        self._starting = starting
        self.pending: list[str] = []  # imports begun and maybe not finished
        # modules whose import failed (not installed): a library may try one at every step (transformers'
        # Trainer tries `lomo_optim`); trying again costs nothing worth a pause
        self.missing: set[str] = set()

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if (
            name not in sys.modules
            and name not in self.missing
            and threading.current_thread() is threading.main_thread()
        ):
            self.pending.append(name)  # (the session records the main thread: imports elsewhere are theirs)
            self._starting(name)
        return None  # finds nothing: the import goes on as it would

    @property
    def nested(self) -> bool:
        """Is the import beginning now inside another import still running?"""
        last = self.pending.pop() if self.pending else None
        try:
            return self.busy
        finally:
            if last is not None:
                self.pending.append(last)

    @property
    def busy(self) -> bool:
        """Is an import that began under the session still running? (A module being imported is in
        ``sys.modules`` with ``__spec__._initializing`` set; one not there has failed or not begun.)"""
        while self.pending:
            mod = sys.modules.get(self.pending[-1])
            if mod is not None and getattr(getattr(mod, "__spec__", None), "_initializing", False):
                return True
            if mod is None:
                self.missing.add(self.pending[-1])
            self.pending.pop()
        return False

    def install(self) -> None:
        sys.meta_path.insert(0, self)  # type: ignore[arg-type]

    def remove(self) -> None:
        meta: list[Any] = sys.meta_path
        if self in meta:
            meta.remove(self)
        self.pending.clear()
