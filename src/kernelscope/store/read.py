"""Open a store: its manifest, its merged profile, and DuckDB views over its Parquet tables.

Every file is checked against the manifest first (``integrity.check_store``): a damaged store is one
line naming the file (``BadInputError``), or with ``allow_partial`` the store without its damaged ranks
(``left_out`` says which, and why).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ..errors import BadInputError
from ..model import Profile, load
from .integrity import Damage, check_store
from .layout import MERGED, Manifest, rank_file, read_manifest
from .schema import TABLES


@dataclass(frozen=True)
class Store:
    root: str
    manifest: Manifest
    left_out: tuple[Damage, ...] = ()  # damaged files whose ranks are left out (allow_partial)

    def merged(self) -> Profile:
        return load(os.path.join(self.root, MERGED))

    @property
    def ranks(self) -> list[int]:
        out = {d.rank for d in self.left_out}
        return sorted(int(r["rank"]) for r in self.manifest.ranks if int(r["rank"]) not in out)

    @property
    def left_out_ranks(self) -> list[int]:
        return sorted({d.rank for d in self.left_out if d.rank is not None})

    def connect(self) -> Any:
        """An in-memory DuckDB connection with one view per table (``keyed``, ``timeline``, ...), ``rank`` included.

        DuckDB reads the Parquet files itself (out of core, only the columns a query needs): the files of
        the ranks kept, named one by one (a file the manifest does not name is never read).
        """
        import duckdb

        con = duckdb.connect(":memory:")
        root = os.path.abspath(self.root)
        for table in TABLES:
            files = ", ".join("'" + rank_file(root, table, r).replace("'", "''") + "'" for r in self.ranks)
            con.execute(
                f"CREATE VIEW {table} AS SELECT * FROM read_parquet([{files}], hive_partitioning = true, "
                "hive_types = {'rank': INTEGER}, union_by_name = true)"
            )
        return con


def open_store(root: str, allow_partial: bool = False) -> Store:
    """The store at ``root``, checked. Damage is one line, or with ``allow_partial`` its ranks left out
    (the merged profile and the manifest are needed whole either way)."""
    manifest = read_manifest(root)
    damage = check_store(root, manifest)
    whole = [d for d in damage if d.rank is None]
    if damage and (whole or not allow_partial):
        first = (whole or damage)[0]
        more = f" (and {len(damage) - 1} more damaged file{'s' if len(damage) > 2 else ''})" if len(damage) > 1 else ""
        hint = "re-import the traces" + ("" if whole else ", or --allow-partial to leave the damaged ranks out")
        raise BadInputError(f"{root}: damaged kernelscope store: {first.line()}{more}; {hint}")
    store = Store(root, manifest, tuple(damage))
    if not store.ranks:
        raise BadInputError(f"{root}: damaged kernelscope store: every rank has a damaged file; re-import the traces")
    return store


__all__ = ["Store", "open_store"]
