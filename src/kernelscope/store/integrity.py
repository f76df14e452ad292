"""A damaged store is named, never believed.

``import --store`` records each file it installs in the manifest (``files``: size and, for Parquet, the
row count). Before any query, ``check_store`` holds every file the manifest implies — each rank's table
of every ``schema.TABLES`` and the merged profile — against it: present, a regular file, the recorded
size, a readable Parquet footer with the recorded rows and the table's columns. What fails is a
``Damage`` naming the file, its rank and why. The reader then stops with one line (exit 2), or with
``--allow-partial`` leaves the damaged ranks out and says which (``Store.left_out``).

Staging folders that a killed import left beside a store (``.JOB.staging-*``) are removed by the next
import into the same parent folder (``clean_staging``): each records the process that owns it, and a
folder whose owner is gone is a leftover.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .layout import MERGED, Manifest, rank_file
from .schema import TABLES

OWNER = "owner.pid"


@dataclass(frozen=True)
class Damage:
    path: str  # relative to the store
    why: str
    rank: int | None = None  # None: the store as a whole (the merged profile)

    def line(self) -> str:
        return f"{self.path} {self.why}"


def relative(root: str, path: str) -> str:
    return os.path.relpath(path, root)


def expected_files(root: str, manifest: Manifest) -> Iterable[tuple[str, str, int | None]]:
    """(relative path, table, rank) of every file the manifest implies; table "" for the merged profile."""
    yield MERGED, "", None
    for entry in manifest.ranks:
        rank = int(entry["rank"])
        for table in TABLES:
            yield relative(root, rank_file(root, table, rank)), table, rank


def fingerprint(path: str) -> dict[str, int]:
    """What the manifest records of an installed file: its size, and its rows for Parquet."""
    out = {"size": os.stat(path).st_size}
    if path.endswith(".parquet"):
        import pyarrow.parquet as pq

        out["rows"] = int(pq.read_metadata(path).num_rows)
    return out


def check_store(root: str, manifest: Manifest) -> list[Damage]:
    """Every file the manifest implies, checked against it; the damage found (empty: a whole store)."""
    damage: list[Damage] = []
    for rel, table, rank in expected_files(root, manifest):
        why = _check_file(os.path.join(root, rel), table, manifest.files.get(rel))
        if why is not None:
            damage.append(Damage(rel, why, rank))
    return damage


def _check_file(path: str, table: str, recorded: dict[str, Any] | None) -> str | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "is missing"
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file"
    if recorded is not None and isinstance(recorded.get("size"), int) and recorded["size"] != st.st_size:
        return f"has {st.st_size:,} bytes; the manifest recorded {recorded['size']:,} (truncated or replaced)"
    if not table:
        return None  # the merged profile: its own reader checks its contents (model.io)
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        meta = pq.read_metadata(path)
        names = set(meta.schema.to_arrow_schema().names)
    except (OSError, pa.ArrowException, ValueError) as exc:
        return f"is not readable Parquet ({str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__})"
    missing = [f.name for f in TABLES[table] if f.name not in names]
    if missing:
        return f"lacks the columns {', '.join(missing[:4])}"
    if recorded is not None and isinstance(recorded.get("rows"), int) and recorded["rows"] != meta.num_rows:
        return f"has {meta.num_rows:,} rows; the manifest recorded {recorded['rows']:,}"
    return None


def clean_staging(parent: str, name: str) -> list[str]:
    """Remove ``.NAME.staging-*`` folders in ``parent`` whose owning process is gone; the ones removed."""
    removed: list[str] = []
    prefix = f".{name}.staging-"
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return removed
    for entry in entries:
        if not entry.name.startswith(prefix) or not entry.is_dir(follow_symlinks=False):
            continue
        if _owner_alive(os.path.join(entry.path, OWNER)):
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(entry.path)
    return removed


def claim_staging(staging: str) -> None:
    """Record this process as the staging folder's owner (``clean_staging`` leaves it alone while it lives)."""
    with open(os.path.join(staging, OWNER), "w", encoding="utf-8") as fh:
        fh.write(str(os.getpid()))


def _owner_alive(pid_file: str) -> bool:
    try:
        with open(pid_file, encoding="utf-8") as fh:
            pid = int(fh.read().strip() or "0")
    except (OSError, ValueError):
        return False  # no owner recorded: an import killed before it wrote one, or a foreign folder
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    return True
