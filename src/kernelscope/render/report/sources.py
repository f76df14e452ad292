"""Snippets of the user's source files, read when the report is written.

For every file named by a python frame (or an estimated part) that is readable here, the
lines around each attributed line (``CONTEXT`` either side) are kept, so the report can
show cost per line without the files. Bounded: at most ``MAX_FILES`` files and
``MAX_CHARS`` characters in all. Only files the ``SourceRoots`` allow are read (regular
text files under the program's roots, never ``/proc`` or a symlink out of a root: the
report is shared, and a trace's file names are someone else's data); others, and files
that are not here, are skipped silently and the report shows their names only.
"""

from __future__ import annotations

from ...model import FrameKind, Profile
from ...trust.sources import SourceRoots

CONTEXT = 3
MAX_FILES = 60
MAX_CHARS = 1_000_000


def _lines_by_file(profile: Profile) -> dict[str, set[int]]:
    out: dict[str, set[int]] = {}
    for f in profile.frames:
        if f.kind in (FrameKind.PYTHON, FrameKind.PART) and f.file and f.line > 0:
            out.setdefault(f.file, set()).add(f.line)
    return out


def capture_sources(profile: Profile, roots: SourceRoots) -> dict[str, list[list[int | str]]]:
    """``{file: [[first_line, text_line, text_line, ...], ...]}``: one entry per run of kept lines."""
    out: dict[str, list[list[int | str]]] = {}
    budget = MAX_CHARS
    for file, wanted in sorted(_lines_by_file(profile).items()):
        if len(out) >= MAX_FILES or budget <= 0:
            break
        lines = roots.read(file)
        if lines is None:
            continue
        keep: set[int] = set()
        for line in wanted:
            keep.update(range(max(1, line - CONTEXT), min(len(lines), line + CONTEXT) + 1))
        runs: list[list[int | str]] = []
        for line in sorted(keep):
            text = lines[line - 1][:500]
            budget -= len(text) + 1
            if runs and int(runs[-1][0]) + len(runs[-1]) - 1 == line:
                runs[-1].append(text)
            else:
                runs.append([line, text])
        if runs:
            out[file] = runs
    return out
