"""``kernelscope`` command line: one verb per job, ``main(argv) -> exit code``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ..errors import KernelscopeError
from ..trust.text import visible
from ..version import __version__
from .command import Command
from .registry import commands


class ParserError(KernelscopeError):
    """A command line argparse refused; ``prog`` is the verb it was for (``kernelscope view``)."""

    def __init__(self, prog: str, message: str) -> None:
        super().__init__(message)
        self.prog = prog


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        # argparse prints usage + message and exits 2; keep it to one clear line.
        raise ParserError(self.prog, f"{message} (see {self.prog} --help)")


def _optional_remainders(parser: argparse.ArgumentParser) -> None:
    """``SCRIPT [ARGS...]``: argparse calls a REMAINDER positional required; it is not."""
    for action in parser._actions:
        if action.nargs == argparse.REMAINDER:
            action.required = False


EXAMPLES = """\
examples:
  kernelscope run train.py --epochs 1       profile a script: print the tree, save train.ksprof
  kernelscope view train.ksprof --by line   where the time goes, by source line
  kernelscope view trace.json.gz            a Kineto trace works wherever a profile does
  kernelscope import rank*.json.gz -o run.ksprof
  kernelscope timeline trace.json.gz        GPU busy/idle, idle gaps, host-device syncs
  kernelscope VERB --help                   one verb's options, defaults and examples

exit codes: 0 ok; 1 the profiled program failed or diff --fail-above tripped; 2 bad input or usage.
"""


def build_parser(cmds: Sequence[Command]) -> argparse.ArgumentParser:
    parser = _Parser(
        prog="kernelscope",
        description="Where your model's time goes, from kernels to source lines.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-V", "--version", action="version", version=f"kernelscope {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for cmd in cmds:
        p = sub.add_parser(
            cmd.name, help=cmd.help, description=cmd.help, formatter_class=argparse.RawDescriptionHelpFormatter
        )
        cmd.prepare_parser(p)
        _optional_remainders(p)
        p.set_defaults(_command=cmd)
    return parser


# optional dependencies (pyproject extras) that a verb imports when it needs them: module -> extra
OPTIONAL = {
    "duckdb": "store",
    "pyarrow": "store",
    "dask": "store",
    "distributed": "store",
    "scipy": "history",
    "mcp": "mcp",
    "onnx": "onnx",
    "perfetto": "perfetto",
    "torch": "torch",
    "jax": "jax",
    "triton": "triton",
}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    cmds = commands(argv[0] if argv else None)
    parser = build_parser(cmds)
    try:
        args = parser.parse_args(argv)
        if getattr(args, "_command", None) is None:
            names = ", ".join(c.name for c in cmds)
            print(f"kernelscope: error: give a command ({names}); kernelscope --help shows examples", file=sys.stderr)
            return 2
        return int(args._command.run(args))
    except ParserError as exc:
        print(f"{exc.prog}: error: {visible(str(exc))}", file=sys.stderr)
        return 2
    except KernelscopeError as exc:
        print(f"kernelscope: error: {visible(str(exc))}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:
        extra = OPTIONAL.get((exc.name or "").split(".")[0])
        if extra is None:
            raise  # not an optional dependency: a bug, shown as one
        print(f"kernelscope: error: this needs {exc.name}: pip install 'kernelscope[{extra}]'", file=sys.stderr)
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
