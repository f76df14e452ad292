"""The lines above every view: what the profile is, and what its numbers mean."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.text import Text

from ..analysis.summary import Summary
from .format import fmt_ns


def header_lines(s: Summary, notes: Sequence[str] = ()) -> list[str]:
    first = [s.source]
    first += [x for x in (s.date, s.host, s.rank) if x]
    first += list(s.devices)
    wall = f"wall {fmt_ns(s.wall_ns)}" if s.wall_ns else "wall time not recorded"
    share = f"{100 * s.user_share:.0f}% under a user line" if s.user_share is not None else "no time recorded"
    second = f"time = {s.time_meaning}: {fmt_ns(s.time_ns)} · {share} · {wall}"
    return [" · ".join(first), second, *notes]


def render_header(console: Console, s: Summary, notes: Sequence[str] = ()) -> None:
    """Prose lines, wrapped at the console width (tables below never wrap)."""
    for line in header_lines(s, notes):
        console.print(Text(line, style="dim"), overflow="fold")
    console.print()
