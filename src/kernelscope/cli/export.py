"""``kernelscope export PROFILE|TRACE --format FORMAT -o FILE``: the profile in another tool's format."""

from __future__ import annotations

import argparse
import sys

from ..errors import UsageError
from ..inputs import open_profile
from ..render.exporters import exporters, find_exporter
from ..render.json_view import dump


class ExportCommand:
    name = "export"
    help = "Write a profile or trace in another tool's format (chrome, pprof, proton, hatchet, speedscope, folded)."

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        known = exporters()
        formats = ", ".join(f"{e.name} ({e.description})" for e in known)
        parser.add_argument("input", metavar="PROFILE|TRACE", help="a .ksprof profile or a trace kernelscope imports")
        parser.add_argument(
            "--format",
            "-f",
            required=True,
            metavar="|".join(e.name for e in known),
            help=f"output format: {formats}",
        )
        parser.add_argument("-o", "--output", required=True, metavar="FILE", help="output file ('-' for stdout)")
        parser.add_argument(
            "--json",
            action="store_true",
            help="print the documented JSON (schema 1) of what was written (not with -o -)",
        )

    def run(self, args: argparse.Namespace) -> int:
        exporter = find_exporter(args.format)  # an unknown format fails before any reading
        if args.json and args.output == "-":
            raise UsageError("--json needs -o FILE: with -o - stdout holds the export itself")
        profile = open_profile(args.input)
        if args.output == "-":
            exporter.write(profile, sys.stdout)
            return 0
        try:
            exporter.write(profile, args.output)
        except OSError as exc:  # missing folder, no permission, disk full: the output, not a bug
            raise UsageError(f"{args.output}: cannot write ({exc.strerror or exc})") from None
        if args.json:
            dump({"schema": 1, "output": args.output, "format": exporter.name, "input": args.input})
        return 0


COMMAND = ExportCommand()
