"""``--source-root DIR`` (repeatable): the folders whose source files a report or the MCP server may read."""

from __future__ import annotations

import argparse
import os

from ..errors import UsageError
from ..trust.sources import SourceRoots


def add_source_root_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--source-root",
        action="append",
        default=None,
        metavar="DIR",
        help="a folder whose source files may be shown beside their lines (repeatable; default: the current "
        "folder). Files elsewhere, /proc, /sys, /dev and symlinks out of these folders show their name only",
    )


def source_roots(args: argparse.Namespace) -> SourceRoots:
    given: list[str] | None = getattr(args, "source_root", None)
    if not given:
        return SourceRoots.here()
    for folder in given:
        if not os.path.isdir(folder):
            raise UsageError(f"--source-root {folder}: not a folder")
    return SourceRoots.of(given)
