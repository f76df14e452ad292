"""``kernelscope report PROFILE|TRACE -o REPORT.html``: one self-contained, offline HTML report."""

from __future__ import annotations

import argparse

from ..errors import UsageError
from ..inputs import open_profile
from ..render.json_view import dump
from ..render.report import write_report


class ReportCommand:
    name = "report"
    help = "Write a self-contained HTML report (flame graph, tables, bottom-up, source, findings)."

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("input", metavar="PROFILE|TRACE", help="a .ksprof profile or a trace kernelscope imports")
        parser.add_argument("-o", "--output", required=True, metavar="REPORT.html", help="the HTML file to write")
        parser.add_argument("--json", action="store_true", help="print the documented JSON (schema 1), not a line")

    def run(self, args: argparse.Namespace) -> int:
        profile = open_profile(args.input)
        try:
            write_report(profile, args.output)
        except OSError as exc:  # missing folder, no permission, disk full: the output, not a bug
            raise UsageError(f"{args.output}: cannot write ({exc.strerror or exc})") from None
        if args.json:
            dump({"schema": 1, "report": args.output, "input": args.input})
        else:
            print(f"wrote {args.output}")
        return 0


COMMAND = ReportCommand()
