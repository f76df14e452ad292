"""One place that decides colour and width: NO_COLOR, pipes and COLUMNS are respected."""

from __future__ import annotations

import os
import sys
from typing import IO

from rich.console import Console


def make_console(file: IO[str] | None = None, width: int | None = None) -> Console:
    out = file or sys.stdout
    no_color = "NO_COLOR" in os.environ or os.environ.get("TERM") == "dumb"
    force = True if os.environ.get("FORCE_COLOR") and not no_color else None
    if width is None and not out.isatty():
        width = int(os.environ.get("COLUMNS", "0") or 0) or 120
    return Console(
        file=out,
        no_color=no_color,
        force_terminal=force,
        width=width,
        highlight=False,
        emoji=False,
        soft_wrap=False,
    )
