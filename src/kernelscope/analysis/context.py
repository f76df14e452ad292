"""Where a node sits: its user line and its innermost framework op.

DESIGN.md: the *user line* is the innermost Python frame outside the stdlib, site-packages,
the framework and kernelscope. Collectors and importers already leave those frames out of the
tree (``attribute.userframes``, ``importers.kineto.pyframes``), so here the user line is the
innermost Python frame on the path, the same key ``view --by line`` uses. ``is_library`` can
drop more files (e.g. a model library) without re-importing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..model import FrameKind, Profile
from ..model.frames import Frame


def no_library(path: str) -> bool:
    """The default: trust the tree, whose Python frames are the user's already."""
    return False


def line_key(frame: Frame) -> str:
    """The key DESIGN.md uses for a line: ``"path/file.py:42"``."""
    return f"{frame.file}:{frame.line}"


@dataclass
class ContextIndex:
    """Memoised per-node lookups (a profile has few nodes; timelines have many rows)."""

    profile: Profile
    is_library: Callable[[str], bool] = no_library
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
