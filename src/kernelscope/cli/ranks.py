"""``kernelscope ranks STORE [--json]``: cross-rank analysis of a job store (DuckDB over its Parquet)."""

from __future__ import annotations

import argparse
import os
import sys

from ..errors import BadInputError
from ..model.io import is_store
from ..render.console import make_console
from ..render.json_view import dump
from .validate import positive_int

EXAMPLES = """\
examples:
  kernelscope import traces/ --store job/   # first: the job as a store
  torchrun --nproc_per_node 4 --no-python kernelscope run --max-overhead 0 --store job/ train.py   # or live
  kernelscope ranks job/                    # straggler, skewed collectives, exposed communication, spread
  kernelscope ranks job/ --json             # documented JSON (schema 1)

Collectives are matched across ranks by NCCL seq_num where Kineto recorded it, else by their order in
their process group (or stream). Skew = last arrival − first arrival. The straggler is the rank that
arrives last most often (a live rank's arrival leaving out kernelscope's own pauses); its extra time is its
time per line/module minus the median rank's.
"""


class RanksCommand:
    name = "ranks"
    help = "cross-rank analysis of a job store: straggler, collective skew, exposed communication, imbalance"

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.epilog = EXAMPLES
        parser.add_argument("store", metavar="STORE", help="a folder written by kernelscope import --store")
        parser.add_argument("--top", type=positive_int, default=10, metavar="N", help="rows per table (default: 10)")
        parser.add_argument("--json", action="store_true", help="print the documented JSON (schema 1) instead of text")
        parser.add_argument(
            "--allow-partial",
            action="store_true",
            help="answer without the ranks whose store files are damaged (listed in the header and --json "
            "left_out); without it a damaged store is an error",
        )

    def run(self, args: argparse.Namespace) -> int:
        if not is_store(args.store):
            from ..store.live import missing_ranks_line

            unfinished = missing_ranks_line(args.store)
            if unfinished is not None:
                raise BadInputError(unfinished)
            what = "no such folder" if not os.path.exists(args.store) else "not a kernelscope store"
            raise BadInputError(
                f"{args.store}: {what} (write one with: kernelscope import TRACES --store {args.store})"
            )
        from ..render.ranks_text import render_ranks
        from ..store.ranks import analyze_store
        from ..store.read import open_store

        report = analyze_store(open_store(args.store, allow_partial=args.allow_partial), top=args.top)
        if args.json:
            dump(report.to_json())
        else:
            render_ranks(make_console(), report, args.top)
        sys.stdout.flush()
        return 0


COMMAND = RanksCommand()
