"""``kernelscope history add|list|show|trend|gate``: run history in DuckDB and a noise-aware regression gate."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..analysis.diff import NOISE_FLOOR_PCT
from ..errors import UsageError
from ..history import BYS, DEFAULT_DB
from ..render.json_view import dump
from .validate import non_negative_float, positive_int

GATE_BYS = ("line", "module", "kernel", "op", "function")


def _db(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", default=DEFAULT_DB, metavar="PATH", help=f"history file (default: {DEFAULT_DB})")


def _json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON (schema 1) instead of text")


def _metric(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-m", "--metric", default="time/ms", help="time/ms (default), cpu/ms, or a column: time_ns, count, flops, ..."
    )


def add_label_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--label", action="append", default=[], metavar="K=V", help="label the run(s), e.g. variant=base (repeatable)"
    )


# --- add -------------------------------------------------------------------------------------------


def _prepare_add(p: argparse.ArgumentParser) -> None:
    p.add_argument("profiles", nargs="+", metavar="PROFILE", help=".ksprof profiles, stores or traces")
    _db(p)
    add_label_argument(p)


def _run_add(args: argparse.Namespace) -> int:
    from ..history.add import add_runs, parse_labels, run_info
    from ..inputs import open_profile

    labels = parse_labels(args.label)
    runs = []
    for path in args.profiles:
        profile = open_profile(path)
        runs.append((profile, run_info(profile, path, labels)))
    ids = add_runs(args.db, runs)
    print(f"kernelscope: added run(s) {', '.join(map(str, ids))} to {args.db}", file=sys.stderr)
    return 0


# --- list ------------------------------------------------------------------------------------------


def _prepare_list(p: argparse.ArgumentParser) -> None:
    _db(p)
    _json(p)


def _run_list(args: argparse.Namespace) -> int:
    from ..history.db import open_history
    from ..history.query import runs

    with open_history(args.db, write=False) as con:
        every = runs(con)
    if args.json:
        dump({"schema": 1, "db": args.db, "runs": [r.to_json() for r in every]})
    else:
        from ..render.history_text import render_runs

        render_runs(_console(), every)
    return 0


# --- show ------------------------------------------------------------------------------------------


def _prepare_show(p: argparse.ArgumentParser) -> None:
    p.add_argument("key", metavar="KEY", help="a key (file:line, module path, op, kernel) or its unique end")
    p.add_argument("--by", choices=BYS, default="line", help="grouping of KEY (default: line)")
    _metric(p)
    p.add_argument("--last", type=positive_int, default=None, metavar="N", help="only the last N runs")
    _db(p)
    _json(p)


def _run_show(args: argparse.Namespace) -> int:
    from ..history.db import open_history
    from ..history.query import matrix, metric_name, runs
    from ..history.trend import find_key

    metric = metric_name(args.metric)
    with open_history(args.db, write=False) as con:
        every = runs(con)[-args.last :] if args.last else runs(con)
        m = matrix(con, [r.id for r in every], args.by, metric)
    k = find_key(m, args.key)
    key, was = m.keys[k] or "", m.was[k]
    values = m.values[k].tolist()
    names = [m.name_in(k, j) for j in range(len(every))]
    if args.json:
        dump(
            {
                "schema": 1,
                "by": args.by,
                "key": key,
                "was": list(was),
                "metric": metric,
                "series": [
                    {**r.to_json(), "key": name, "value": v} for r, name, v in zip(every, names, values, strict=True)
                ],
            }
        )
    else:
        from ..render.history_text import render_series

        render_series(_console(), key, metric, every, values, was, names)
    return 0


# --- trend -----------------------------------------------------------------------------------------


def _prepare_trend(p: argparse.ArgumentParser) -> None:
    p.add_argument("--by", choices=BYS, default="line", help="grouping (default: line)")
    p.add_argument("--last", type=positive_int, default=10, metavar="N", help="the last N runs (default 10)")
    p.add_argument("--limit", type=positive_int, default=20, help="keys to print (default 20)")
    _metric(p)
    _db(p)
    _json(p)


def _run_trend(args: argparse.Namespace) -> int:
    from ..history.db import open_history
    from ..history.query import matrix, metric_name, runs
    from ..history.trend import trends

    metric = metric_name(args.metric)
    with open_history(args.db, write=False) as con:
        last = runs(con)[-args.last :]
        m = matrix(con, [r.id for r in last], args.by, metric)
    rows = trends(m)[: args.limit]
    if args.json:
        dump(
            {
                "schema": 1,
                "by": args.by,
                "metric": metric,
                "runs": [r.id for r in last],
                "keys": [t.to_json() for t in rows],
            }
        )
    else:
        from ..render.history_text import render_trends

        render_trends(_console(), args.by, metric, len(last), rows)
    return 0


# --- gate ------------------------------------------------------------------------------------------


def _prepare_gate(p: argparse.ArgumentParser) -> None:
    p.add_argument("--base", required=True, metavar="REF", help="commit, branch, run id or label K=V")
    p.add_argument("--new", required=True, metavar="REF", help="commit, branch, run id or label K=V")
    p.add_argument("--by", choices=GATE_BYS, default="line", help="grouping (default: line)")
    p.add_argument(
        "--fail-above",
        type=non_negative_float,
        required=True,
        metavar="PCT",
        help="flag keys that grew more than PCT%%",
    )
    p.add_argument(
        "--noise-floor",
        type=non_negative_float,
        default=NOISE_FLOOR_PCT,
        metavar="PCT",
        help=f"keys whose growth is below this %% of the base total never fail (default {NOISE_FLOOR_PCT:g})",
    )
    p.add_argument("--limit", type=int, default=10, help="unflagged keys to print as well (text output; default 10)")
    _metric(p)
    _db(p)
    _json(p)


def _run_gate(args: argparse.Namespace) -> int:
    from ..history.db import open_history
    from ..history.gate import gate
    from ..history.query import matrix, metric_name, select

    metric = metric_name(args.metric)
    with open_history(args.db, write=False) as con:
        base = select(con, args.base)
        new = select(con, args.new)
        if set(base.ids) & set(new.ids):
            raise UsageError(
                f"--base {args.base} and --new {args.new} share runs {sorted(set(base.ids) & set(new.ids))}"
            )
        result = gate(
            matrix(con, base.ids, args.by, metric),
            matrix(con, new.ids, args.by, metric),
            base,
            new,
            args.fail_above,
            args.noise_floor,
        )
    if args.json:
        dump(result.to_json())
    else:
        from ..render.history_text import render_gate

        render_gate(_console(), result, args.limit)
    return 1 if result.flagged else 0


# --- report ----------------------------------------------------------------------------------------


def _prepare_report(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", required=True, metavar="TREND.html", help="page to write")
    p.add_argument("--by", choices=BYS, default="line", help="grouping (default: line)")
    p.add_argument("--key", action="append", default=[], metavar="KEY", help="plot this key (repeatable)")
    p.add_argument("--last", type=positive_int, default=50, metavar="N", help="the last N runs (default 50)")
    p.add_argument(
        "--limit", type=positive_int, default=12, help="without --key: the keys that moved most (default 12)"
    )
    _metric(p)
    _db(p)


def _run_report(args: argparse.Namespace) -> int:
    from ..history.db import open_history
    from ..history.query import matrix, metric_name, runs
    from ..history.trend import find_key, trends
    from ..render.history_html import render_trend_page

    metric = metric_name(args.metric)
    with open_history(args.db, write=False) as con:
        last = runs(con)[-args.last :]
        m = matrix(con, [r.id for r in last], args.by, metric)
    every = trends(m)
    if args.key:
        wanted = [m.keys[find_key(m, k)] for k in args.key]
        rows = [next(t for t in every if t.key == k) for k in dict.fromkeys(wanted)]
    else:
        rows = every[: args.limit]
    page = render_trend_page(f"kernelscope history: {args.db}", args.by, metric, last, rows)
    try:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(page)
    except OSError as exc:
        raise UsageError(f"{args.output}: cannot write the page ({exc.strerror or exc})") from None
    print(f"kernelscope: wrote {args.output} ({len(rows)} keys, {len(last)} runs)", file=sys.stderr)
    return 0


@dataclass(frozen=True)
class Sub:
    help: str
    prepare: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


SUBCOMMANDS: dict[str, Sub] = {
    "add": Sub(
        "store profiles as runs (git commit and branch, host, devices, command, labels)", _prepare_add, _run_add
    ),
    "list": Sub("the runs in the history", _prepare_list, _run_list),
    "show": Sub("one key's series over the runs, with a sparkline", _prepare_show, _run_show),
    "trend": Sub("which keys changed most over the last N runs", _prepare_trend, _run_trend),
    "report": Sub("a self-contained HTML page: one plot per key over the runs", _prepare_report, _run_report),
    "gate": Sub("CI gate: exit 1 when a key got slower beyond the threshold and the noise", _prepare_gate, _run_gate),
}


class HistoryCommand:
    name = "history"
    help = "run history in DuckDB: add runs, list, show a key's series, trends, and a noise-aware regression gate"

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        sub = parser.add_subparsers(dest="history_command", metavar="ACTION", parser_class=type(parser))
        for name, s in SUBCOMMANDS.items():
            p = sub.add_parser(name, help=s.help, description=s.help)
            s.prepare(p)
            p.set_defaults(_history=s)

    def run(self, args: argparse.Namespace) -> int:
        s: Any = getattr(args, "_history", None)
        if s is None:
            raise UsageError(f"give an action: {', '.join(SUBCOMMANDS)} (kernelscope history --help)")
        return int(s.run(args))


# --- kernelscope run --history ---------------------------------------------------------------------


def _console() -> Any:
    from ..render.console import make_console  # (not on `kernelscope run`'s start-up path)

    return make_console()


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """``kernelscope run``'s ``--history [--db PATH] [--label K=V]``."""
    parser.add_argument("--history", action="store_true", help="also add the run to the run history (history add)")
    parser.add_argument(
        "--db", default=DEFAULT_DB, metavar="PATH", help=f"history file for --history (default: {DEFAULT_DB})"
    )
    add_label_argument(parser)


def record_run(profile: Any, saved: str, args: argparse.Namespace) -> None:
    """After ``kernelscope run`` saved ``profile``: add it to the history when ``--history`` asked for it."""
    if not getattr(args, "history", False):
        return
    from ..history.add import add_runs, parse_labels, run_info

    ids = add_runs(args.db, [(profile, run_info(profile, saved, parse_labels(args.label)))])
    print(f"kernelscope: added run {ids[0]} to {args.db}", file=sys.stderr)


COMMAND = HistoryCommand()
