"""The history file: one DuckDB database, opened under a lock file so that several processes may add to it.

DuckDB lets one process write a file at a time (and no reader while it does), so every open takes
``PATH.lock`` first: exclusive to write, shared to read, retried until ``LOCK_TIMEOUT_S``.
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

# Bump when a table or column of the history file changes; older files are refused (docs/history.md).
HISTORY_SCHEMA = 1
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
        schema_version INTEGER NOT NULL
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
        bytes DOUBLE NOT NULL
    )""",
)


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
    import duckdb

    if not write and not os.path.isfile(path):
        raise BadInputError(f"{path}: no history here (kernelscope history add PROFILE --db {path})")
    if write:
        folder = os.path.dirname(os.path.abspath(path))
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as exc:
            raise BadInputError(f"{folder}: cannot create the history folder ({exc.strerror or exc})") from None
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
    if version != str(HISTORY_SCHEMA):
        raise BadInputError(
            f"{path}: history schema {version} is not the {HISTORY_SCHEMA} this kernelscope reads; "
            "start a new file (--db NEW) and add the profiles again"
        )
    keyed = meta.get("keyed_schema")
    if keyed != str(SCHEMA_VERSION):
        raise BadInputError(
            f"{path}: keyed rows of store schema {keyed}, not the {SCHEMA_VERSION} this kernelscope writes; "
            "start a new file (--db NEW) and add the profiles again"
        )


__all__ = ["HISTORY_SCHEMA", "LOCK_TIMEOUT_S", "open_history"]
