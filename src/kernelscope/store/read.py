"""Open a store: its manifest, its merged profile, and DuckDB views over its Parquet tables."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ..model import Profile, load
from .layout import MERGED, Manifest, read_manifest
from .schema import TABLES


@dataclass(frozen=True)
class Store:
    root: str
    manifest: Manifest

    def merged(self) -> Profile:
        return load(os.path.join(self.root, MERGED))

    @property
    def ranks(self) -> list[int]:
        return sorted(int(r["rank"]) for r in self.manifest.ranks)

    def connect(self) -> Any:
        """An in-memory DuckDB connection with one view per table (``keyed``, ``timeline``, ...), ``rank`` included.

        DuckDB reads the Parquet files itself (out of core, only the columns a query needs).
        """
        import duckdb

        con = duckdb.connect(":memory:")
        for table in TABLES:
            pattern = os.path.join(os.path.abspath(self.root), table, "rank=*", "*.parquet").replace("'", "''")
            con.execute(
                f"CREATE VIEW {table} AS SELECT * FROM read_parquet('{pattern}', hive_partitioning = true, "
                "hive_types = {'rank': INTEGER}, union_by_name = true)"
            )
        return con


def open_store(root: str) -> Store:
    return Store(root, read_manifest(root))


__all__ = ["Store", "open_store"]
