"""``kernelscope report PROFILE|TRACE -o REPORT.html``: one self-contained, offline HTML report."""

from __future__ import annotations

import argparse

from ..errors import UsageError
from ..inputs import open_profile
from ..model import Profile
from ..model.io import is_store
from ..render.json_view import dump
from ..render.report import write_report
from .sources import add_source_root_argument, source_roots


class ReportCommand:
    name = "report"
    help = "Write a self-contained HTML report (flame graph, tables, bottom-up, source, findings)."

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "input",
            metavar="PROFILE|TRACE|STORE",
            help="a .ksprof profile, a trace kernelscope imports, or a job store (adds the Ranks view)",
        )
        parser.add_argument("-o", "--output", required=True, metavar="REPORT.html", help="the HTML file to write")
        add_source_root_argument(parser)
        parser.add_argument(
            "--allow-partial",
            action="store_true",
            help="for a store: leave out the ranks whose files are damaged (the Ranks view lists them)",
        )
        parser.add_argument("--json", action="store_true", help="print the documented JSON (schema 1), not a line")

    def run(self, args: argparse.Namespace) -> int:
        profile = _open(args.input, args.allow_partial)
        try:
            write_report(profile, args.output, source_roots(args))
        except OSError as exc:  # missing folder, no permission, disk full: the output, not a bug
            raise UsageError(f"{args.output}: cannot write ({exc.strerror or exc})") from None
        if args.json:
            dump({"schema": 1, "report": args.output, "input": args.input})
        else:
            print(f"wrote {args.output}")
        return 0


def _open(path: str, allow_partial: bool = False) -> Profile:
    """The profile to report; for a store, its merged profile with the store's own cross-rank analysis."""
    if not is_store(path):
        return open_profile(path)
    from ..store.read import open_store

    store = open_store(path, allow_partial=allow_partial)
    profile = store.merged()
    try:
        from ..analysis.advisor.ranks import use_job_report
        from ..store.ranks import analyze_store

        use_job_report(profile, analyze_store(store))
    except ImportError:  # no duckdb: the report is written without the Ranks view (as for any merged profile)
        pass
    return profile


COMMAND = ReportCommand()
