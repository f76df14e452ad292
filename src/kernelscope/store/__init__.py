"""The columnar job store: per-rank Parquet tables (pyarrow) beside the merged ``.ksprof``.

``schema`` holds the versioned table schemas (shared with the run history); ``keys`` turns a
profile into one row per structural key, keyed exactly as ``kernelscope diff`` matches rows.
"""

from __future__ import annotations

from .keys import BYS, keyed_rows, keyed_table
from .schema import KEYED_SCHEMA, METRICS, SCHEMA_VERSION

__all__ = ["BYS", "KEYED_SCHEMA", "METRICS", "SCHEMA_VERSION", "keyed_rows", "keyed_table"]
