"""``kernelscope analyze PROFILE|TRACE [--json]``: advisor findings (rules in analysis.advisor)."""

from __future__ import annotations

import argparse
import sys

from ..analysis.advisor import rules, run_rules
from ..errors import UsageError
from ..inputs import open_profile
from ..render.console import make_console
from ..render.findings_text import render_findings
from ..render.json_view import dump

SCHEMA = 1


class AnalyzeCommand:
    name = "analyze"
    help = "advisor findings: graph breaks, recompiles, compile time, ... with the line to change"

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("profile", help="a .ksprof profile or a trace file")
        parser.add_argument("--rule", action="append", metavar="NAME", help="run only this rule (repeatable)")
        parser.add_argument("--json", action="store_true", help="print the documented JSON (schema 1) instead of text")

    def run(self, args: argparse.Namespace) -> int:
        only: set[str] | None = None
        if args.rule:
            known = {r.name for r in rules()}
            unknown = sorted(set(args.rule) - known)
            if unknown:
                raise UsageError(f"unknown rule {', '.join(unknown)}; known rules: {', '.join(sorted(known))}")
            only = set(args.rule)
        profile = open_profile(args.profile)
        findings = run_rules(profile, only)
        if args.json:
            dump({"schema": SCHEMA, "findings": [f.to_json() for f in findings]})
        else:
            render_findings(make_console(), findings, args.profile)
        sys.stdout.flush()
        return 0


COMMAND = AnalyzeCommand()
