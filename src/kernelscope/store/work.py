"""The per-rank task the Dask workers run: import one trace, write its tables to a staging folder.

It runs in a worker process (a local Dask cluster or a remote one), so it takes and returns plain
values: a path in, a :class:`RankOutcome` out. Bad input is an outcome (named, skipped), not an
exception, so one corrupt file never stops the job. The rank's profile goes to the staging folder too,
not back to the client: the client merges the ranks one at a time (its memory is the merged profile,
not every rank's).
"""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass, field
from typing import Any

import pyarrow.parquet as pq

from ..errors import KernelscopeError
from ..model import save
from .layout import job_signature
from .tables import rank_tables


@dataclass(frozen=True)
class RankOutcome:
    index: int  # position on the command line
    path: str
    metadata: dict[str, Any] = field(default_factory=dict)  # the rank's profile's metadata
    error: str | None = None  # one line: why this file was skipped
    signature: dict[str, Any] = field(default_factory=dict)
    staged: str = ""  # folder holding this file's tables (<table>.parquet)
    peak_rss_kb: int = 0  # the worker's peak resident memory when the task ended
    died: bool = False  # the worker running the task died (this file, or another task it held, killed it)

    @property
    def imported(self) -> bool:
        return self.error is None and bool(self.staged)

    @property
    def profile_path(self) -> str:
        """The rank's profile, staged (``load`` it)."""
        return os.path.join(self.staged, PROFILE)


def import_rank(index: int, path: str, staging: str) -> RankOutcome:
    """Import ``path`` and write each store table as ``staging/<index>/<table>.parquet``."""
    from ..importers import import_file

    try:
        profile = import_file(path)
    except KernelscopeError as exc:
        return RankOutcome(index, path, error=str(exc), peak_rss_kb=peak_kb())
    except Exception as exc:  # an importer bug must not take the job down; it is reported by name
        return RankOutcome(index, path, error=f"{path}: import failed ({type(exc).__name__}: {exc})")
    folder = os.path.join(staging, str(index))
    os.makedirs(folder, exist_ok=True)
    for name, table in rank_tables(profile).items():
        pq.write_table(table, os.path.join(folder, f"{name}.parquet"), compression="zstd")
    save(profile, os.path.join(folder, PROFILE))
    meta = dict(profile.metadata)
    return RankOutcome(index, path, meta, None, job_signature(meta), folder, peak_kb())


PROFILE = "profile.ksprof"  # the rank's profile in its staging folder


def peak_kb() -> int:
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


__all__ = ["RankOutcome", "import_rank"]
