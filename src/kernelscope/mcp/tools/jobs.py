"""Tools over a job store (many ranks) and the run history: ``ranks`` and ``history``."""

from __future__ import annotations

from typing import Any

from ..failure import ToolFailure
from ..registry import tool
from .options import Path


@tool("ranks")
def ranks(path: Path) -> dict[str, Any]:
    """Cross-rank analysis of a job store (kernelscope import --store): collectives, skew, stragglers."""
    raise ToolFailure("not_available", "ranks is not available in this build of kernelscope (no job store support)")


@tool("history")
def history(path: Path) -> dict[str, Any]:
    """The run history database (kernelscope history): runs, trends of a key, the noise-aware gate."""
    raise ToolFailure("not_available", "history is not available in this build of kernelscope (no run history support)")
