"""Run history: profiles' keyed rows (``store.keys.keyed_rows``) in an embedded DuckDB file, and a noise-aware gate.

``db`` opens the file under a lock, ``add`` stores runs, ``query`` selects runs and series, ``gate``
compares two sets of runs key by key (docs/history.md).
"""

from __future__ import annotations

DEFAULT_DB = ".kernelscope/history.duckdb"
# The groupings a run stores: ``store.keys.BYS``, named here so that the CLI need not import pyarrow to parse.
BYS = ("line", "function", "module", "op", "kernel")

__all__ = ["BYS", "DEFAULT_DB"]
