"""Plain text tables whose cells never wrap: text columns shrink (with their own shortening rule)
until the table fits the width; numbers keep their width."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rich.console import Console
from rich.text import Text

from .labels import cut_end, prose

Shrink = Callable[[str, int], str]
MIN_TEXT = 8


@dataclass(frozen=True)
class Column:
    header: str
    left: bool = False  # text columns are left-aligned and may shrink
    shrink: Shrink | None = None  # how to shorten a cell to a width (default: cut the end)
    floor: int = MIN_TEXT  # a text column shrinks below this only after the others reached theirs


def _fit(columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int) -> list[int]:
    widths = [max([len(c.header), *(len(r[i]) for r in rows)]) for i, c in enumerate(columns)]
    over = sum(widths) + 2 * (len(widths) - 1) - width
    text = [i for i, c in enumerate(columns) if c.left]
    for floor_of in (lambda c: max(c.floor, len(c.header)), lambda c: max(MIN_TEXT, len(c.header))):
        left = list(text)
        while over > 0 and left:
            # the column with the most room above its floor gives first
            i = max(left, key=lambda k: widths[k] - floor_of(columns[k]))
            spare = widths[i] - floor_of(columns[i])
            if spare <= 0:
                left.remove(i)
                continue
            cut = min(over, spare, max(1, spare // 2))
            widths[i] -= cut
            over -= cut
    return widths


def grid(columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int) -> list[str]:
    """The header line and one line per row, each at most ``width`` characters where the text
    columns can shrink that far."""
    widths = _fit(columns, rows, width)

    def line(cells: Sequence[str], header: bool = False) -> str:
        out = []
        for cell, col, w in zip(cells, columns, widths, strict=True):
            if len(cell) > w:
                cell = (col.shrink or cut_end)(cell, w) if not header else cut_end(cell, w)
            out.append(cell.ljust(w) if col.left else cell.rjust(w))
        return "  ".join(out).rstrip()

    return [line([c.header for c in columns], header=True), *(line(r) for r in rows)]


def print_grid(
    console: Console, title: str | None, columns: Sequence[Column], rows: Sequence[Sequence[str]], note: str = ""
) -> None:
    lines = grid(columns, rows, console.width)
    if title:  # prose: wrapped at the width
        console.print(Text(prose(title, console.width), style="bold"), no_wrap=True)
    out = [Text(lines[0], style="bold")]
    out.extend(Text(x) for x in lines[1:])
    console.print(Text("\n").join(out), no_wrap=True, overflow="ellipsis", crop=True)
    if note:  # prose: wrapped at the width
        console.print(Text(prose(note, console.width), style="dim"), no_wrap=True)
    console.print()
