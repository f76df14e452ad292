"""Tools over a job store (many ranks) and the run history: ``ranks`` and ``history``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from ...inputs import is_store
from ..bounds import DEFAULT_LIMIT, DEFAULT_MAX_BYTES, MAX_LIMIT, capped, int_option
from ..failure import ToolFailure
from ..opened import opened
from ..registry import tool
from .options import Limit, MaxBytes, Path

if TYPE_CHECKING:  # the store's modules need the [store] extra (pyarrow, duckdb): imported when called
    from ...store.ranks import RanksReport


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
def history(path: Path) -> dict[str, Any]:
    """The run history database (kernelscope history): runs, trends of a key, the noise-aware gate."""
    raise ToolFailure("not_available", "history is not available in this build of kernelscope (no run history support)")
