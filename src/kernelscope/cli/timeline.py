"""``kernelscope timeline PROFILE|TRACE [--json]``: breakdown, idle gaps, launch statistics, syncs."""

from __future__ import annotations

import argparse
import sys

from ..analysis.timeline import analyze, has_timeline
from ..errors import KernelscopeError
from ..inputs import open_profile
from ..render.console import make_console
from ..render.json_view import dump
from ..render.timeline_text import render_timeline


class TimelineCommand:
    name = "timeline"
    help = "GPU timeline breakdown (busy/idle/computation/exposed comm and memcpy), idle gaps, launches, syncs"

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("profile", help="a .ksprof profile or a trace file")
        parser.add_argument("--kernel-wait-us", type=float, default=5.0, help="gaps shorter than this are kernel waits")
        parser.add_argument("--top", type=int, default=10, help="how many idle gaps and sync points to list")
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
            render_timeline(make_console(), report)
        sys.stdout.flush()
        return 0


COMMAND = TimelineCommand()
