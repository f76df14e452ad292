"""The folders whose source files the ``source`` tool may read, set once when the server starts.

``kernelscope mcp --source-root DIR`` (repeatable); by default the server's working folder. A profile's
file names are someone else's data, so the tool reads nothing outside these (see ``trust.sources``).
"""

from __future__ import annotations

from ..trust.sources import SourceRoots

_roots: SourceRoots | None = None


def set_source_roots(roots: SourceRoots) -> None:
    global _roots
    _roots = roots


def source_roots() -> SourceRoots:
    return _roots if _roots is not None else SourceRoots.here()
