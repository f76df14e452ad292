"""``kernelscope analyze PROFILE|TRACE [--json]``: advisor findings (rules in analysis.advisor)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..analysis.advisor import Rule, measured_ms, rules, run_rules, summary
from ..analysis.per_step import scale_of, statement
from ..errors import UsageError
from ..inputs import open_profile
from ..render.console import make_console
from ..render.findings_text import render_findings, render_rules
from ..render.json_view import dump

SCHEMA = 1


def _threshold(text: str) -> tuple[str, float]:
    name, sep, value = text.partition("=")
    try:
        if not sep:
            raise ValueError
        return name.strip(), float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected RULE.NAME=NUMBER, got {text!r}") from None


def _rule_json(r: Rule) -> dict[str, Any]:
    return {
        "name": r.name,
        "family": r.family,
        "description": r.description,
        "applies": sorted(a.value for a in r.applies),
        "thresholds": {name: {"default": t.default, "doc": t.doc} for name, t in r.thresholds.items()},
    }


class AnalyzeCommand:
    name = "analyze"
    help = "advisor findings: idle GPU, syncs, launch-bound work, exposed communication, ... with the line to change"

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("profile", nargs="?", help="a .ksprof profile or a trace file")
        parser.add_argument("--rule", action="append", metavar="NAME", help="run only this rule (repeatable)")
        parser.add_argument(
            "--threshold",
            action="append",
            type=_threshold,
            metavar="RULE.NAME=VALUE",
            help="override a rule's threshold (repeatable; --list-rules shows them)",
        )
        parser.add_argument("--list-rules", action="store_true", help="list the rules and their thresholds, then exit")
        parser.add_argument("--json", action="store_true", help="print the documented JSON (schema 1) instead of text")

    def run(self, args: argparse.Namespace) -> int:
        if args.list_rules:
            if args.json:
                dump({"schema": SCHEMA, "rules": [_rule_json(r) for r in rules()]})
            else:
                render_rules(make_console(), rules())
            return 0
        if not args.profile:
            raise UsageError("analyze needs a profile or trace file (or --list-rules)")
        only: set[str] | None = None
        if args.rule:
            known = {r.name for r in rules()}
            unknown = sorted(set(args.rule) - known)
            if unknown:
                raise UsageError(f"unknown rule {', '.join(unknown)}; known rules: {', '.join(sorted(known))}")
            only = set(args.rule)
        overrides = dict(args.threshold or [])
        profile = open_profile(args.profile)
        findings = run_rules(profile, only, overrides)
        scale = scale_of(profile.metadata)
        span = measured_ms(profile)
        line = summary(findings, None if span is None else span * scale.factor, scale.per_step)
        if args.json:
            doc: dict[str, Any] = {"schema": SCHEMA, "summary": line}
            words = statement(scale)
            if words:
                doc["per_step"] = words  # (savings are per step: a sample of whole steps)
            dump(doc | {"findings": [f.to_json() for f in findings]})
        else:
            render_findings(make_console(), findings, args.profile, line)
        sys.stdout.flush()
        return 0


COMMAND = AnalyzeCommand()
