"""The HTML report: one self-contained, offline file with the icicle, tables and views of a profile.

``write_report(profile, path)`` is all a caller needs (``kernelscope report`` and ``run --html``).
"""

from __future__ import annotations

import os

from ...model import Profile
from ...trust.sources import SourceRoots
from ..exporters._atomic import atomic_text_file
from .html import render_html
from .payload import build_payload


def render_report(profile: Profile, roots: SourceRoots | None = None) -> str:
    """The report's HTML text; source snippets only from files under ``roots`` (default: the current folder)."""
    return render_html(build_payload(profile, roots=roots))


def write_report(profile: Profile, path: str | os.PathLike[str], roots: SourceRoots | None = None) -> None:
    """Write the report atomically to ``path`` (nothing is left behind when it fails).

    Raises ``OSError`` when the file cannot be written; the CLI turns it into one line.
    """
    text = render_report(profile, roots)
    with atomic_text_file(path) as fh:
        fh.write(text)


__all__ = ["render_report", "write_report"]
