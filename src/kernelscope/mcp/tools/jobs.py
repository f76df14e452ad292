"""Tools over a job store (many ranks) and the run history: ``ranks`` and ``history``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from ...model.io import is_store
from ..bounds import DEFAULT_LIMIT, DEFAULT_MAX_BYTES, MAX_LIMIT, capped, int_option
from ..failure import ToolFailure
from ..opened import opened
from ..registry import tool
from .options import Limit, MaxBytes

if TYPE_CHECKING:  # the store's modules need the [store] extra (pyarrow, duckdb): imported when called
    from ...analysis.ranks import RanksReport


@tool("ranks")
def ranks(
    path: Annotated[
        str, Field(description="a job store (kernelscope import --store JOB/) or a merged multi-rank profile")
    ],
    top: Annotated[int, Field(description="rows per table: skewed collectives, excess, spread (default 10)")] = 10,
    limit: Limit = DEFAULT_LIMIT,
    max_bytes: MaxBytes = DEFAULT_MAX_BYTES,
) -> dict[str, Any]:
    """Cross-rank analysis (kernelscope ranks): collectives matched across ranks and the most skewed, the
    straggler rank and its extra time by line and module against the median rank, communication per rank,
    rank-to-rank spread of line and module time. Keys are the line/module keys of top and source."""
    top = int_option("top", top, 1, 100)
    limit = int_option("limit", limit, 1, MAX_LIMIT)
    entry = opened(path)  # a store opens as its merged profile; checks the path exists
    try:
        import duckdb  # noqa: F401
        import pyarrow  # noqa: F401
    except ImportError as exc:
        raise ToolFailure(
            "not_available", f"ranks needs the job store's libraries ({exc}); pip install 'kernelscope[store]'"
        ) from None
    report: RanksReport | None
    if is_store(path):
        from ...store.ranks import analyze_store
        from ...store.read import open_store

        report = entry.get(f"ranks:{top}", lambda: analyze_store(open_store(path), top=top))
    else:
        from ...store.ranks import analyze_profile

        report = entry.get(f"ranks:{top}", lambda: analyze_profile(entry.profile, top=top))
        if report is None:
            raise ToolFailure(
                "bad_input",
                f"{path}: one rank only; ranks needs a job store (kernelscope import TRACES --store JOB/) "
                "or a profile merged from several ranks",
                path=path,
            )
    doc = {"path": path, **{k: v for k, v in report.to_json().items() if k != "schema"}}
    return capped(doc, limit, max_bytes)


@tool("history")
def history(
    path: Annotated[str, Field(description="a run history database (kernelscope history add --db PATH)")],
    by: Annotated[str, Field(description="line, function, module, op or kernel (default line)")] = "line",
    metric: Annotated[str, Field(description="a stored metric, e.g. time_ns (default), count, flops")] = "time_ns",
    last: Annotated[int, Field(description="the newest runs to compare (default 10)")] = 10,
    limit: Limit = DEFAULT_LIMIT,
    max_bytes: MaxBytes = DEFAULT_MAX_BYTES,
) -> dict[str, Any]:
    """The run history (kernelscope history): its newest runs, and the keys that changed most over them (the
    newer half of the runs against the older half, each key with its series). Keys are those of top/source."""
    last = int_option("last", last, 1, 1000)
    limit = int_option("limit", limit, 1, MAX_LIMIT)
    try:
        from ...history.db import open_history
        from ...history.query import check_by, matrix, metric_name, runs
        from ...history.trend import trends
    except ImportError as exc:
        raise ToolFailure(
            "not_available", f"history needs duckdb ({exc}); pip install 'kernelscope[history]'"
        ) from None
    from ...errors import KernelscopeError

    try:
        by = check_by(by)
        name = metric_name(metric)
        with open_history(path, write=False) as con:
            newest = runs(con)[-last:]
            m = matrix(con, [r.id for r in newest], by, name)
    except KernelscopeError as exc:
        raise ToolFailure("bad_input", str(exc)) from None
    doc = {
        "path": path,
        "by": by,
        "metric": name,
        "runs": [
            {"id": r.id, "git_commit": r.git_commit, "branch": r.branch, "labels": dict(r.labels)} for r in newest
        ],
        "keys": [t.to_json() for t in trends(m)],
    }
    return capped(doc, limit, max_bytes)
