"""Cross-rank analysis in SQL (DuckDB) over a store's Parquet tables.

* collectives are matched across ranks by (process group, NCCL ``seq_num``) where Kineto recorded it,
  else by (group, position in the group); a group not recorded is the stream the kernel ran on;
* skew of a collective = last arrival − first arrival (kernel starts); a live rank's arrival leaves out the
  time its recorder paused it (folding between windows) since its previous collective;
* the straggler is the rank that arrives last most often (a tie: the one that held the others longer, summed
  over those collectives: how long after the rank before it it came); its extra time is read per line and per
  module as its time minus the median rank's;
* exposed communication per rank comes from each rank's device breakdown (interval unions);
* spread: per line/module, the min, median and max over ranks (a rank without the key counts 0).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..analysis.ranks import Collective, Excess, RankComm, RanksReport, Spread, Straggler
from ..errors import BadInputError
from ..model import Profile
from .read import Store
from .split import split_ranks
from .tables import rank_tables

TOP = 10


def _rows(con: Any, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in con.execute(sql, params or []).fetchall()]


_MATCHED = """
CREATE TEMP TABLE matched AS
SELECT rank, name, pg, seq IS NOT NULL AS by_seq, coalesce(seq, "order") AS idx,
       start_ns - paused_ns AS start_ns, line_key
FROM collectives
"""

_SKEW = """
SELECT any_value(name), pg, idx, bool_and(by_seq), count(*) AS n, max(start_ns) - min(start_ns) AS skew,
       arg_min(rank, start_ns), arg_max(rank, start_ns), arg_max(line_key, start_ns)
FROM matched GROUP BY pg, idx HAVING count(*) > 1
ORDER BY skew DESC, pg, idx
"""

# per collective with skew, the last rank and how long after the one before it it came; the straggler is last
# most often (a tie goes to the one that held the others longer)
_LAST = """
WITH r AS (
  SELECT pg, idx, rank, start_ns,
         row_number() OVER (PARTITION BY pg, idx ORDER BY start_ns DESC, rank) AS k,
         count(*) OVER (PARTITION BY pg, idx) AS n
  FROM matched
), c AS (
  SELECT pg, idx, max(rank) FILTER (WHERE k = 1) AS last_rank,
         max(start_ns) FILTER (WHERE k = 1) - max(start_ns) FILTER (WHERE k = 2) AS held
  FROM r WHERE n > 1 GROUP BY pg, idx
)
SELECT last_rank, count(*) AS n, sum(held) AS held FROM c WHERE held > 0
GROUP BY last_rank ORDER BY n DESC, held DESC, last_rank LIMIT 1
"""

# every (by, key) of the job on every rank, 0 where a rank lacks it
_DENSE = """
CREATE TEMP TABLE dense AS
WITH ks AS (SELECT DISTINCT "by", key FROM keyed WHERE "by" IN ('line', 'module') AND key IS NOT NULL),
     rs AS (SELECT DISTINCT rank FROM keyed)
SELECT ks."by", ks.key, rs.rank, coalesce(k.time_ns, 0) AS t
FROM ks CROSS JOIN rs LEFT JOIN keyed k ON k."by" = ks."by" AND k.key = ks.key AND k.rank = rs.rank
"""

_EXCESS = """
WITH m AS (SELECT "by", key, median(t) AS med FROM dense GROUP BY ALL)
SELECT d."by", d.key, d.t, m.med, d.t - m.med AS extra
FROM dense d JOIN m USING ("by", key)
WHERE d.rank = ? AND d.t > m.med
ORDER BY extra DESC, d."by", d.key LIMIT ?
"""

_STRAGGLER_EXTRA = """
WITH k AS (SELECT rank, sum(time_ns) AS t FROM keyed WHERE "by" = 'kernel' GROUP BY rank)
SELECT (SELECT t FROM k WHERE rank = ?) - median(t) FROM k
"""

_SPREAD = """
SELECT "by", key, min(t), median(t), max(t), arg_max(rank, t), (max(t) - min(t)) / nullif(median(t), 0)
FROM dense GROUP BY "by", key
ORDER BY max(t) - min(t) DESC, "by", key LIMIT ?
"""

_COMM = """
SELECT rank, max(total_ns), sum(computation_ns), sum(total_comm_ns), sum(exposed_comm_ns)
FROM devices GROUP BY rank ORDER BY rank
"""

_HEAT_KEYS = """
SELECT key FROM dense WHERE "by" = ? GROUP BY key ORDER BY sum(t) DESC, key LIMIT ?
"""


def analyze_store(store: Store, top: int = TOP) -> RanksReport:
    """The cross-rank analysis of a checked store (``read.open_store``); a file DuckDB still cannot read
    (damaged inside, past what the checks see) is one line naming the store."""
    import duckdb

    skipped = [s.reason for s in store.manifest.skipped]
    skipped += [f"rank {d.rank} left out: {d.line()}" for d in store.left_out]
    con = store.connect()
    try:
        report = analyze(con, tuple(store.ranks), tuple(skipped), top)
    except duckdb.Error as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        raise BadInputError(f"{store.root}: damaged kernelscope store ({first}); re-import the traces") from None
    finally:
        con.close()
    return replace(report, left_out=tuple(store.left_out_ranks))


def analyze_profile(merged: Profile, top: int = TOP) -> RanksReport | None:
    """The same analysis on a merged profile held in memory (no store): its ranks' tables as Arrow, in DuckDB.

    Collectives are matched by order there (the merged profile keeps no seq_num). None for one rank.
    """
    import duckdb
    import pyarrow as pa

    parts = split_ranks(merged)
    if len(parts) < 2:
        return None
    tables: dict[str, list[pa.Table]] = {}
    for rank, profile in parts:
        for name, table in rank_tables(profile).items():
            tables.setdefault(name, []).append(
                table.append_column("rank", pa.array([rank] * table.num_rows, pa.int32()))
            )
    con = duckdb.connect(":memory:")
    try:
        for name, parts_ in tables.items():
            con.register(name, pa.concat_tables(parts_))
        return analyze(con, tuple(r for r, _p in parts), (), top)
    finally:
        con.close()


def analyze(con: Any, ranks: tuple[int, ...], skipped: tuple[str, ...], top: int = TOP) -> RanksReport:
    """Cross-rank analysis over ``keyed``, ``collectives`` and ``devices`` relations that carry ``rank``."""
    con.execute(_MATCHED)
    con.execute(_DENSE)
    skew = [
        Collective(str(r[0]), str(r[1]), int(r[2]), bool(r[3]), int(r[4]), int(r[5]), int(r[6]), int(r[7]), r[8])
        for r in _rows(con, _SKEW)
    ]
    straggler = None
    last = _rows(con, _LAST)
    if last:
        rank, n = int(last[0][0]), int(last[0][1])
        excess = tuple(
            Excess(str(r[0]), r[1], float(r[2]), float(r[3]), float(r[4])) for r in _rows(con, _EXCESS, [rank, top])
        )
        extra = _rows(con, _STRAGGLER_EXTRA, [rank])
        straggler = Straggler(rank, n, len(skew), float(extra[0][0] or 0.0) if extra else 0.0, excess)
    comm = tuple(RankComm(*(int(v) for v in r)) for r in _rows(con, _COMM))
    spread = tuple(
        Spread(str(r[0]), r[1], float(r[2]), float(r[3]), float(r[4]), int(r[5]), float(r[6] or 0.0))
        for r in _rows(con, _SPREAD, [top])
    )
    heatmap: dict[str, Any] = {}
    for by in ("line", "module"):
        keys = [str(r[0]) for r in _rows(con, _HEAT_KEYS, [by, top])]
        if not keys:
            continue
        cells = _rows(
            con,
            "SELECT rank, list(t ORDER BY idx) FROM dense JOIN (SELECT unnest(?) AS key, generate_subscripts(?, 1) AS idx) "
            'USING (key) WHERE "by" = ? GROUP BY rank ORDER BY rank',
            [keys, keys, by],
        )
        heatmap[by] = {
            "keys": keys,
            "ranks": [int(c[0]) for c in cells],
            "rows": [[float(v) for v in c[1]] for c in cells],
        }
    return RanksReport(
        ranks=ranks,
        skipped=skipped,
        collectives=len(skew),
        matched_by_seq=bool(skew) and all(c.by_seq for c in skew),
        top_skew=tuple(skew[:top]),
        straggler=straggler,
        comm=comm,
        spread=spread,
        heatmap=heatmap,
    )


__all__ = [
    "Collective",
    "Excess",
    "RankComm",
    "RanksReport",
    "Spread",
    "Straggler",
    "analyze",
    "analyze_profile",
    "analyze_store",
]
