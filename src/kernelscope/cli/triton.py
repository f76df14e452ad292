"""``kernelscope triton [--json] [-o OUT.ksprof] SCRIPT [ARGS...]``: a Triton kernel memory inspector."""

from __future__ import annotations

import argparse
import os
import signal
import sys

from ..errors import BadInputError
from ..render.console import make_console
from ..render.json_view import dump
from ..render.triton_text import render_triton
from .stdout import program_output_to_stderr


class TritonCommand:
    name = "triton"
    help = (
        "run a script's Triton kernels on the interpreter (CPU) and report per kernel line bytes, masks, "
        "dot shapes, out-of-bounds accesses, races and uncoalesced access"
    )

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--json",
            action="store_true",
            help="print the documented JSON (schema 1) instead of text; the program's own output goes to stderr",
        )
        parser.add_argument("-o", "--output", help="also save the launches (Proton-style metrics) as a .ksprof profile")
        parser.add_argument(
            "--write-maps",
            action="store_true",
            help="add, per launch and stored tensor, which program wrote each element",
        )
        parser.add_argument("target", metavar="SCRIPT")
        parser.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS")

    def run(self, args: argparse.Namespace) -> int:
        from ..collect.runner import check_target
        from ..collect.triton.inspector import inspect_script
        from ..collect.triton.report import to_json

        check_target(args.target, False)
        if os.path.isdir(args.target):
            raise BadInputError(f"{args.target}: give a Python script, not a folder")
        if args.output:
            out_dir = os.path.dirname(os.path.abspath(args.output))
            if not os.path.isdir(out_dir):
                raise BadInputError(f"{args.output}: folder {out_dir} does not exist")
        with program_output_to_stderr(args.json):
            result = inspect_script(args.target, list(args.args), write_maps=args.write_maps)
        sys.stdout.flush()
        if args.output:
            previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
            try:
                result.profile.save(args.output)
            finally:
                signal.signal(signal.SIGINT, previous)
        for warning in result.profile.metadata.get("warnings", []):
            print(f"kernelscope: warning: {warning}", file=sys.stderr)
        if args.json:
            dump(to_json(result.report))
        else:
            render_triton(make_console(), result.report)
        sys.stdout.flush()
        if args.output:
            print(f"kernelscope: profile saved to {args.output}", file=sys.stderr)
        if result.outcome.error:
            print(f"kernelscope: {result.outcome.error}", file=sys.stderr)
        return result.outcome.exit_code


COMMAND = TritonCommand()
