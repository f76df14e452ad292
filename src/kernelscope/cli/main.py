"""``kernelscope`` command line: one verb per job, ``main(argv) -> exit code``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .. import __version__
from ..errors import KernelscopeError
from .command import Command
from .registry import commands


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        # argparse prints usage + message and exits 2; keep it to one clear line.
        raise KernelscopeError(f"{self.prog}: {message} (see --help)")


def build_parser(cmds: Sequence[Command]) -> argparse.ArgumentParser:
    parser = _Parser(prog="kernelscope", description="Where your model's time goes, from kernels to source lines.")
    parser.add_argument("--version", action="version", version=f"kernelscope {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for cmd in cmds:
        p = sub.add_parser(cmd.name, help=cmd.help, description=cmd.help)
        cmd.prepare_parser(p)
        p.set_defaults(_command=cmd)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    cmds = commands()
    parser = build_parser(cmds)
    try:
        args = parser.parse_args(argv)
        if getattr(args, "_command", None) is None:
            parser.print_help(sys.stderr)
            return 2
        return int(args._command.run(args))
    except KernelscopeError as exc:
        print(f"kernelscope: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kernelscope: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `kernelscope view ... | head`: the reader went away; that is fine. Point stdout at
        # devnull so the interpreter's final flush does not complain.
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


def entry() -> None:
    sys.exit(main())
