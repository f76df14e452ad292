"""``kernelscope run --store JOB/``: the ranks of a live job write the job store themselves.

Each rank, when its program ends, writes its tables into the rank's partitions (``keyed/rank=R/...``) and its
profile to ``JOB/ranks/rank<R>.ksprof``; then, holding a lock on ``JOB/.lock``, it looks at which ranks are
there. The rank that completes the world writes the merged profile and, last, the manifest: until then the
folder is not a store (``kernelscope ranks`` says so), and a store is never half written. A rank that died
leaves the job incomplete, which ``kernelscope ranks JOB/`` names.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow.parquet as pq

from ..errors import UsageError
from ..importers.multirank import merge_ranks
from ..model import Profile, load, save
from ..model.io import is_store
from .layout import MANIFEST, MERGED, Manifest, rank_file, write_manifest
from .schema import TABLES
from .tables import rank_tables

RANKS = "ranks"  # JOB/ranks/rank<R>.ksprof: each rank's own profile
LOCK = ".lock"
_RANK_FILE = re.compile(r"rank(\d+)\.ksprof$")
_IN_PROGRESS = {RANKS, LOCK, *TABLES}


@dataclass(frozen=True)
class RankWritten:
    root: str
    rank: int
    profile: str  # the rank's own profile
    present: tuple[int, ...]  # ranks written so far
    world_size: int
    complete: bool  # this rank completed the store (merged profile and manifest written)
    finished: bool  # the store is complete (by this rank or an earlier one)


def check_live_target(root: str) -> None:
    """Refuse, before the program runs, a ``--store`` that is a file, a finished store or another folder."""
    if os.path.exists(root) and not os.path.isdir(root):
        raise UsageError(f"{root}: exists and is not a folder; give --store a new or empty folder")
    if is_store(root):
        raise UsageError(f"{root}: holds a finished store; give --store a new folder for this run")
    if os.path.isdir(root):
        other = sorted(set(os.listdir(root)) - _IN_PROGRESS)
        if other:
            raise UsageError(
                f"{root}: a folder that is not a kernelscope job in progress ({other[0]}); "
                "give --store a new or empty folder"
            )


@contextlib.contextmanager
def _locked(root: str) -> Iterator[None]:
    with open(os.path.join(root, LOCK), "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _replace(path: str, write: object) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    write(tmp)  # type: ignore[operator]
    os.replace(tmp, path)


def present_ranks(root: str) -> tuple[int, ...]:
    folder = os.path.join(root, RANKS)
    if not os.path.isdir(folder):
        return ()
    found = (_RANK_FILE.fullmatch(name) for name in os.listdir(folder))
    return tuple(sorted(int(m.group(1)) for m in found if m))


def write_rank(
    root: str, profile: Profile, rank: int, world_size: int | None, backend: str | None = None
) -> RankWritten:
    """Write one rank into the job store at ``root``; the rank that completes the world finishes the store."""
    world = world_size if world_size and world_size > 0 else 1
    os.makedirs(os.path.join(root, RANKS), exist_ok=True)
    for table, data in rank_tables(profile).items():
        _replace(rank_file(root, table, rank), lambda p, d=data: pq.write_table(d, p, compression="zstd"))
    own = os.path.join(root, RANKS, f"rank{rank}.ksprof")
    _replace(own, lambda p: save(profile, p))
    with _locked(root):
        present = present_ranks(root)
        finished = is_store(root)
        complete = not finished and set(range(world)) <= set(present)
        if complete:
            ranks = list(range(world))
            merged = merge_ranks((load(os.path.join(root, RANKS, f"rank{r}.ksprof")) for r in ranks), ranks)
            _replace(os.path.join(root, MERGED), lambda p: save(merged, p))
            sources = tuple(os.path.join(os.path.abspath(root), RANKS, f"rank{r}.ksprof") for r in ranks)
            signature: dict[str, object] = {"world_size": world}
            if backend:
                signature["backend"] = backend
            manifest = Manifest(
                signature,
                sources,
                tuple({"rank": r, "source": s, "import_warnings": {}} for r, s in zip(ranks, sources, strict=True)),
                extra={"written_by": "kernelscope run"},
            )
            write_manifest(root, manifest)
    return RankWritten(root, rank, own, present, world, complete, finished or complete)


def missing_ranks_line(root: str) -> str | None:
    """For a folder that a live job began but did not finish: which ranks are missing."""
    if is_store(root) or not os.path.isdir(os.path.join(root, RANKS)):
        return None
    present = present_ranks(root)
    return (
        f"{root}: a live job's store that is not complete (ranks written: "
        f"{', '.join(map(str, present)) or 'none'}; {MANIFEST} is written when the last rank ends)"
    )


__all__ = ["RankWritten", "check_live_target", "missing_ranks_line", "present_ranks", "write_rank"]
