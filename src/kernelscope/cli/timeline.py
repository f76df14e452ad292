"""``kernelscope timeline PROFILE|TRACE [--json]``: breakdown, idle gaps, launch statistics, syncs."""

from __future__ import annotations

import argparse
import sys

from ..analysis.summary import device_names, summarize
from ..analysis.timeline import analyze, has_timeline
from ..errors import KernelscopeError
from ..inputs import open_profile
from ..render.console import make_console
from ..render.header_text import render_header
from ..render.json_view import dump
from ..render.timeline_text import render_timeline
from .validate import non_negative_float, non_negative_int

EXAMPLES = """\
examples:
  kernelscope timeline trace.json.gz               # read the trace directly
  kernelscope timeline run.ksprof --top 20         # an imported profile keeps its timeline
  kernelscope timeline trace.json.gz --json        # documented JSON, schema 1

Definitions are TraceLens' gpu_timeline ones: over the span of the GPU events whose launch is in the
trace, busy = union of all, computation = union of non-communication kernels and memsets, exposed
communication = communication not overlapped by computation, idle = total - busy.
"""


class TimelineCommand:
    name = "timeline"
    help = "GPU timeline breakdown (busy/idle/computation/exposed comm and memcpy), idle gaps, launches, syncs"

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.epilog = EXAMPLES
        parser.add_argument("profile", metavar="PROFILE|TRACE", help="a .ksprof profile (imported) or a trace file")
        parser.add_argument(
            "--kernel-wait-us",
            type=non_negative_float,
            default=5.0,
            metavar="US",
            help="queued gaps shorter than this are kernel waits (default: 5)",
        )
        parser.add_argument(
            "--top",
            type=non_negative_int,
            default=10,
            metavar="N",
            help="idle gaps and sync lines to list (default: 10)",
        )
        parser.add_argument("--json", action="store_true", help="print the documented JSON (schema 1) instead of text")

    def run(self, args: argparse.Namespace) -> int:
        profile = open_profile(args.profile)
        if not has_timeline(profile):
            raise KernelscopeError(
                f"{args.profile}: has no timeline (it was recorded or saved without one); "
                "import the trace file itself or record with a device"
            )
        if args.kernel_wait_us < 0 or args.top < 0:
            raise KernelscopeError("--kernel-wait-us and --top must not be negative")
        report = analyze(profile, kernel_wait_ns=int(args.kernel_wait_us * 1000), top=args.top)
        if args.json:
            dump(report.to_json())
        else:
            console = make_console()
            render_header(console, summarize(profile))
            render_timeline(console, report, device_names(profile))
        sys.stdout.flush()
        return 0


COMMAND = TimelineCommand()
