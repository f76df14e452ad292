"""One place that decides colour and width: NO_COLOR, pipes and COLUMNS are respected."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import IO

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment

from ..trust.text import visible_keep_lines


class InertConsole(Console):
    """A rich Console that never sends a control character it did not make itself.

    Names are escaped where labels are made (``render.labels``, so widths are right); this is the net
    under everything else: every text segment is passed through ``visible_keep_lines`` (rich's own
    colour and cursor codes are styles and control segments, not text, and are untouched).
    """

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        for seg in super().render(renderable, options):
            if seg.control is None and seg.text:
                text = visible_keep_lines(seg.text)
                if text is not seg.text:
                    seg = Segment(text, seg.style, seg.control)
            yield seg


def make_console(file: IO[str] | None = None, width: int | None = None) -> Console:
    out = file or sys.stdout
    no_color = "NO_COLOR" in os.environ or os.environ.get("TERM") == "dumb"
    force = True if os.environ.get("FORCE_COLOR") and not no_color else None
    if width is None and not out.isatty():
        width = int(os.environ.get("COLUMNS", "0") or 0) or 120
    return InertConsole(
        file=out,
        no_color=no_color,
        force_terminal=force,
        width=width,
        highlight=False,
        emoji=False,
        soft_wrap=False,
    )
