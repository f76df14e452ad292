"""Where a node sits: its user line and its innermost framework op.

DESIGN.md: the *user line* is the innermost Python frame outside the interpreter's
stdlib, site-packages, the framework and kernelscope itself. Traces from the
PyTorch profiler name files by a short path (``torch/nn/modules/module.py``),
so a file is library code when its path runs through ``site-packages`` or its
top-level package is the stdlib or a well-known framework package.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from ..model import FrameKind, Profile
from ..model.frames import Frame

# Top-level packages treated as "the framework", not user code.
LIBRARY_PACKAGES = frozenset(
    {
        "torch",
        "torchvision",
        "torchaudio",
        "triton",
        "jax",
        "jaxlib",
        "flax",
        "optax",
        "numpy",
        "scipy",
        "PIL",
        "tqdm",
        "transformers",
        "accelerate",
        "diffusers",
        "vllm",
        "xformers",
        "apex",
        "deepspeed",
        "kernelscope",
    }
)
_STDLIB = frozenset(sys.stdlib_module_names)


def is_library_file(path: str) -> bool:
    """True for stdlib, site-packages and framework files; builtins (``<...>``) too."""
    if not path or path.startswith("<"):
        return True
    p = path.replace("\\", "/")
    if "/site-packages/" in p or "/dist-packages/" in p or "/lib/python3" in p:
        return True
    head = p.lstrip("/").split("/", 1)[0]
    if head.endswith(".py"):
        head = head[:-3]
    return head in LIBRARY_PACKAGES or head in _STDLIB


def line_key(frame: Frame) -> str:
    """The key DESIGN.md uses for a line: ``"path/file.py:42"``."""
    return f"{frame.file}:{frame.line}"


@dataclass
class ContextIndex:
    """Memoised per-node lookups (a profile has few nodes; timelines have many rows)."""

    profile: Profile
    is_library: Callable[[str], bool] = is_library_file
    _lines: dict[int, Frame | None] = field(default_factory=dict)
    _ops: dict[int, str | None] = field(default_factory=dict)

    def user_line(self, node: int) -> Frame | None:
        """Innermost user Python frame on the path to ``node``, or None (unattributed)."""
        hit = self._lines.get(node, _MISSING)
        if hit is not _MISSING:
            return hit  # type: ignore[return-value]
        found: Frame | None = None
        for anc in self.profile.ancestors(node):
            f = self.profile.frame_of(anc)
            if f.kind is FrameKind.PYTHON and not self.is_library(f.file):
                found = f
                break
        self._lines[node] = found
        return found

    def line(self, node: int) -> str | None:
        f = self.user_line(node)
        return None if f is None else line_key(f)

    def op(self, node: int) -> str | None:
        """Innermost framework op enclosing ``node`` (the node itself included)."""
        hit = self._ops.get(node, _MISSING)
        if hit is not _MISSING:
            return hit  # type: ignore[return-value]
        found: str | None = None
        for anc in self.profile.ancestors(node):
            f = self.profile.frame_of(anc)
            if f.kind is FrameKind.OP:
                found = f.name
                break
        self._ops[node] = found
        return found

    def name(self, node: int) -> str:
        return self.profile.frame_of(node).name


_MISSING = object()
