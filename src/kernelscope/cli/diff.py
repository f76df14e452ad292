"""``kernelscope diff BASE NEW [--by ...] [--fail-above PCT] [--json]``: what changed between two runs."""

from __future__ import annotations

import argparse
import sys

from ..analysis.diff import BYS, NOISE_FLOOR_PCT, diff, regressions
from ..errors import UsageError
from ..inputs import open_profile
from ..render.console import make_console
from ..render.diff_text import render_diff
from ..render.json_view import dump


class DiffCommand:
    name = "diff"
    help = "compare two runs: rows matched across moved lines and renamed kernels, sorted by |Δ|"

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("base", help="the baseline: a .ksprof profile or a trace file")
        parser.add_argument("new", help="the run to compare with it")
        parser.add_argument("--by", choices=BYS, default="line", help="grouping (default: line)")
        parser.add_argument("-m", "--metric", help="metric to compare (default: time_ns, else cpu_time_ns)")
        parser.add_argument(
            "--fail-above",
            type=float,
            metavar="PCT",
            help="exit 1 when the total or any row above the noise floor grew by more than PCT percent",
        )
        parser.add_argument(
            "--noise-floor",
            type=float,
            default=NOISE_FLOOR_PCT,
            metavar="PCT",
            help=f"rows whose growth is below this % of the base total never fail (default {NOISE_FLOOR_PCT:g})",
        )
        parser.add_argument("--limit", type=int, default=30, help="rows to print (text output; default 30)")
        parser.add_argument("--json", action="store_true", help="print the documented JSON (schema 1) instead of text")

    def run(self, args: argparse.Namespace) -> int:
        if args.fail_above is not None and args.fail_above < 0:
            raise UsageError("--fail-above must not be negative")
        if args.noise_floor < 0 or args.limit < 0:
            raise UsageError("--noise-floor and --limit must not be negative")
        base = open_profile(args.base)
        new = open_profile(args.new)
        result = diff(base, new, by=args.by, metric=args.metric)
        gate = regressions(result, args.fail_above, args.noise_floor) if args.fail_above is not None else None
        if args.json:
            doc = result.to_json()
            if gate is not None:
                doc["fail_above"] = {
                    "pct": gate.pct,
                    "noise_floor_pct": gate.noise_floor_pct,
                    "tripped": gate.tripped,
                    "total_tripped": gate.total_tripped,
                    "rows": [r.key for r in gate.rows],
                }
            dump(doc)
        else:
            render_diff(make_console(), result, args.limit, gate)
        sys.stdout.flush()
        return 1 if gate is not None and gate.tripped else 0


COMMAND = DiffCommand()
