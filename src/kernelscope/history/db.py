"""The history file: one DuckDB database, opened under a lock file so that several processes may add to it.

DuckDB lets one process write a file at a time (and no reader while it does), so every open takes
``PATH.lock`` first: exclusive to write, shared to read, retried until ``LOCK_TIMEOUT_S``.

A file of an older history schema that this kernelscope knows how to upgrade (``MIGRATIONS``) is
migrated in place, under the exclusive lock, the first time it is opened; any other schema is refused.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from typing import Any

from ..errors import BadInputError
from ..store.schema import SCHEMA_VERSION

# Bump when a table or column of the history file changes, with a step in MIGRATIONS (docs/history.md).
# 2: rows.series (the identity a key keeps across moved lines) and the anchors table.
# 3: runs.recorded_steps and runs.steps (a live sample of whole steps; NULL: no steps recorded).
HISTORY_SCHEMA = 3
LOCK_TIMEOUT_S = 120.0

_TABLES = (
    "CREATE TABLE IF NOT EXISTS meta (name VARCHAR PRIMARY KEY, value VARCHAR NOT NULL)",
    """CREATE TABLE IF NOT EXISTS runs (
        id BIGINT PRIMARY KEY,
        started DOUBLE NOT NULL,
        added DOUBLE NOT NULL,
        git_commit VARCHAR,
        branch VARCHAR,
        host VARCHAR,
        devices VARCHAR NOT NULL,
        command VARCHAR NOT NULL,
        profile VARCHAR,
        schema_version INTEGER NOT NULL,
        recorded_steps INTEGER,
        steps INTEGER
    )""",
    "CREATE TABLE IF NOT EXISTS labels (run_id BIGINT NOT NULL, name VARCHAR NOT NULL, value VARCHAR NOT NULL)",
    """CREATE TABLE IF NOT EXISTS rows (
        run_id BIGINT NOT NULL,
        "by" VARCHAR NOT NULL,
        key VARCHAR,
        time_ns DOUBLE NOT NULL,
        cpu_time_ns DOUBLE NOT NULL,
        count DOUBLE NOT NULL,
        flops DOUBLE NOT NULL,
        bytes DOUBLE NOT NULL,
        series VARCHAR
    )""",
    # per program (the runs' command line): its newest run's profile without the timeline, which the next
    # run of that program is paired with (history.series)
    "CREATE TABLE IF NOT EXISTS anchors (program VARCHAR NOT NULL, run_id BIGINT NOT NULL, profile BLOB NOT NULL)",
)


def _migrate_1(con: Any) -> None:
    """1 → 2: every old row is its own series, named by its key; no anchors (the next run starts them)."""
    con.execute("ALTER TABLE rows ADD COLUMN series VARCHAR")
    con.execute("UPDATE rows SET series = key")
    con.execute(_TABLES[-1])


def _migrate_2(con: Any) -> None:
    """2 → 3: the runs' steps; unknown for the runs already stored (read as complete runs)."""
    con.execute("ALTER TABLE runs ADD COLUMN recorded_steps INTEGER")
    con.execute("ALTER TABLE runs ADD COLUMN steps INTEGER")


# from version N: the step to N + 1
MIGRATIONS = {1: _migrate_1, 2: _migrate_2}


@contextlib.contextmanager
def _locked(path: str, exclusive: bool) -> Iterator[None]:
    lock_path = path + ".lock"
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise BadInputError(f"{lock_path}: cannot open the history lock file ({exc.strerror or exc})") from None
    try:
        mode = (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB
        deadline = time.monotonic() + LOCK_TIMEOUT_S
        while True:
            try:
                fcntl.flock(fd, mode)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise BadInputError(
                        f"{path}: another kernelscope process has held the history for {LOCK_TIMEOUT_S:g} s; try again"
                    ) from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)  # releases the lock


@contextlib.contextmanager
def open_history(path: str, write: bool) -> Iterator[Any]:
    """A DuckDB connection to the history at ``path``, created (with its folder) when writing."""
    if not write and not os.path.isfile(path):
        raise BadInputError(f"{path}: no history here (kernelscope history add PROFILE --db {path})")
    if write:
        folder = os.path.dirname(os.path.abspath(path))
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as exc:
            raise BadInputError(f"{folder}: cannot create the history folder ({exc.strerror or exc})") from None
    if not write and _needs_migration(path):
        if not os.access(path, os.W_OK):
            raise BadInputError(
                f"{path}: an older history schema, migrated to {HISTORY_SCHEMA} in place on first use, "
                "but this file is not writable; copy it somewhere writable"
            )
        with _connected(path, write=True):  # migrates, under the exclusive lock
            pass
    with _connected(path, write) as con:
        yield con


@contextlib.contextmanager
def _connected(path: str, write: bool) -> Iterator[Any]:
    import duckdb

    with _locked(path, exclusive=write):
        try:
            con = duckdb.connect(path, read_only=not write)
        except duckdb.Error as exc:
            raise BadInputError(f"{path}: not a readable history file ({_first_line(exc)})") from None
        try:
            _check_or_create(con, path, write)
            yield con
        except duckdb.Error as exc:
            raise BadInputError(f"{path}: the history file cannot be used ({_first_line(exc)})") from None
        finally:
            con.close()


def _needs_migration(path: str) -> bool:
    """Whether the file is of an older schema that ``MIGRATIONS`` upgrades (read under the shared lock)."""
    import duckdb

    with _locked(path, exclusive=False):
        try:
            con = duckdb.connect(path, read_only=True)
        except duckdb.Error:
            return False  # _connected says why, in one line
        try:
            tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
            if "meta" not in tables:
                return False
            row = con.execute("SELECT value FROM meta WHERE name = 'history_schema'").fetchone()
        except duckdb.Error:
            return False
        finally:
            con.close()
    return row is not None and str(row[0]).isdigit() and int(row[0]) in MIGRATIONS


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _check_or_create(con: Any, path: str, write: bool) -> None:
    tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    if not tables and write:
        con.execute("BEGIN")
        for ddl in _TABLES:
            con.execute(ddl)
        con.execute(
            "INSERT INTO meta VALUES ('history_schema', ?), ('keyed_schema', ?)",
            [
                str(HISTORY_SCHEMA),
                str(SCHEMA_VERSION),
            ],
        )
        con.execute("COMMIT")
        return
    if "meta" not in tables:
        raise BadInputError(f"{path}: a DuckDB file that is not a kernelscope history (no meta table)")
    meta = dict(con.execute("SELECT name, value FROM meta").fetchall())
    version = meta.get("history_schema")
    if write and version is not None and version.isdigit() and int(version) in MIGRATIONS:
        _migrate(con, int(version))
        version = str(HISTORY_SCHEMA)
    if version != str(HISTORY_SCHEMA):
        raise BadInputError(
            f"{path}: history schema {version} is not the {HISTORY_SCHEMA} this kernelscope reads"
            f"{' (nor one it migrates)' if MIGRATIONS else ''}; start a new file (--db NEW) and add the profiles again"
        )
    keyed = meta.get("keyed_schema")
    if keyed != str(SCHEMA_VERSION):
        raise BadInputError(
            f"{path}: keyed rows of store schema {keyed}, not the {SCHEMA_VERSION} this kernelscope writes; "
            "start a new file (--db NEW) and add the profiles again"
        )


def _migrate(con: Any, version: int) -> None:
    con.execute("BEGIN")
    try:
        while version < HISTORY_SCHEMA:
            MIGRATIONS[version](con)
            version += 1
        con.execute("UPDATE meta SET value = ? WHERE name = 'history_schema'", [str(version)])
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


__all__ = ["HISTORY_SCHEMA", "LOCK_TIMEOUT_S", "MIGRATIONS", "open_history"]
