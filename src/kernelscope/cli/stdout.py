"""Under ``--json`` stdout holds only the JSON: a profiled program's own output goes to stderr."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def program_output_to_stderr(enabled: bool) -> Iterator[None]:
    """While the program runs, its output goes to stderr: ``print`` (``sys.stdout``), and writes to file
    descriptor 1 by extensions and child processes. Nothing changes when ``enabled`` is false."""
    if not enabled:
        yield
        return
    sys.stdout.flush()
    try:
        saved: int | None = os.dup(1)
        os.dup2(2, 1)
    except OSError:  # no real fd 1 (embedded): sys.stdout is redirected all the same
        saved = None
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stderr.flush()
        if saved is not None:
            os.dup2(saved, 1)
            os.close(saved)
