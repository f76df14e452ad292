"""The lines above every view: what the profile is, and what its numbers mean."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from rich.console import Console
from rich.text import Text

from ..analysis.summary import Summary
from .format import fmt_ns

SEP = " · "


def header_items(s: Summary) -> list[list[str]]:
    """Lines of items: what the profile is; what ``time`` is in it."""
    first = [s.source, *(x for x in (s.date, s.host, s.rank) if x), *s.devices]
    share = f"{100 * s.user_share:.0f}% under a user line" if s.user_share is not None else "no time recorded"
    wall = f"wall {fmt_ns(s.wall_ns)}" if s.wall_ns else "wall time not recorded"
    second = [f"time = {s.time_meaning}: {fmt_ns(s.time_ns)}", share, wall]
    return [
        *([[s.ended]] if s.ended else []),
        first,
        second,
        *([[s.coverage]] if s.coverage else []),
        *([[s.native]] if s.native else []),
    ]


def pack(items: Sequence[str], width: int) -> list[str]:
    """Items joined by `` · `` into lines of at most ``width``; an item is broken only when it
    is longer than a line by itself."""
    lines: list[str] = []
    cur = ""
    for item in items:
        cand = f"{cur}{SEP}{item}" if cur else item
        if len(cand) <= width or not cur:
            cur = cand
        else:
            lines.append(cur)
            cur = item
    if cur:
        lines.append(cur)
    out: list[str] = []
    for line in lines:
        out.extend(textwrap.wrap(line, width, break_on_hyphens=False) if len(line) > width > 0 else [line])
    return out


def render_header(console: Console, s: Summary, notes: Sequence[str] = ()) -> None:
    """The summary and ``notes`` (each a line of `` · ``-separated items), wrapped at the width."""
    lines: list[str] = []
    for items in [*header_items(s), *(n.split(SEP) for n in notes)]:
        lines.extend(pack(items, console.width))
    console.print(Text("\n".join(lines), style="dim"), no_wrap=True, crop=False)
    console.print()
