"""Snippets of the user's source files, read when the report is written.

For every file named by a python frame (or an estimated part) that is readable here, the
lines around each attributed line (``CONTEXT`` either side) are kept, so the report can
show cost per line without the files. Bounded: at most ``MAX_FILES`` files and
``MAX_CHARS`` characters in all; files that cannot be read are skipped silently (a trace
imported on another machine names files that are not here).
"""

from __future__ import annotations

import os

from ...model import FrameKind, Profile

CONTEXT = 3
MAX_FILES = 60
MAX_CHARS = 1_000_000
MAX_FILE_BYTES = 2_000_000


def _lines_by_file(profile: Profile) -> dict[str, set[int]]:
    out: dict[str, set[int]] = {}
    for f in profile.frames:
        if f.kind in (FrameKind.PYTHON, FrameKind.PART) and f.file and f.line > 0:
            out.setdefault(f.file, set()).add(f.line)
    return out


def _read(path: str) -> list[str] | None:
    try:
        if not os.path.isfile(path) or os.path.getsize(path) > MAX_FILE_BYTES:
            return None
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read().splitlines()
    except OSError:
        return None


def capture_sources(profile: Profile, cwd: str) -> dict[str, list[list[int | str]]]:
    """``{file: [[first_line, text_line, text_line, ...], ...]}``: one entry per run of kept lines."""
    out: dict[str, list[list[int | str]]] = {}
    budget = MAX_CHARS
    for file, wanted in sorted(_lines_by_file(profile).items()):
        if len(out) >= MAX_FILES or budget <= 0:
            break
        lines = _read(file if os.path.isabs(file) else os.path.join(cwd, file))
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
