"""``kernelscope view PROFILE|TRACE``: the tree, or a flat view by line/module/op/kernel."""

from __future__ import annotations

import argparse
import sys

from ..analysis.metrics import parse_metrics
from ..analysis.views import VIEWS, TreeOptions, group, tree_view
from ..errors import UsageError
from ..inputs import open_profile
from ..model import Profile
from ..render.console import make_console
from ..render.json_view import dump, grouped_json, tree_json
from ..render.table_text import render_grouped
from ..render.tree_text import render_tree

DEFAULT_METRICS = ["time/ms", "time/%", "count"]


def add_view_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--by", default="tree", help=f"one of: {', '.join(VIEWS)} (default: tree)")
    p.add_argument(
        "-m",
        "--metrics",
        action="append",
        help="comma-separated metrics: stored (time_ns, cpu_time_ns, count, flops, bytes, alloc_bytes, user metrics) "
        "or derived (time/ms, time/%%, avg, flop/s, byte/s, A/B, X/s)",
    )
    p.add_argument("--depth", type=int, help="tree: show at most this many levels")
    p.add_argument("--include", help="tree: keep only contexts whose path matches this regex")
    p.add_argument("--exclude", help="tree: drop contexts matching this regex (with what is below them)")
    p.add_argument("--threshold", type=float, default=0.0, metavar="PCT", help="tree: hide nodes under PCT%% of time")
    p.add_argument("--limit", type=int, default=40, help="flat views: rows to show (default 40; 0 = all)")
    p.add_argument("--json", action="store_true", help="print the documented JSON (schema 1) instead of text")


def show(profile: Profile, args: argparse.Namespace) -> None:
    by = args.by
    if by not in VIEWS:
        raise UsageError(f"unknown --by {by!r}; choose one of: {', '.join(VIEWS)}")
    available = set(profile.metrics)
    specs = parse_metrics(args.metrics, available, DEFAULT_METRICS)
    stored = sorted({c for s in specs for c in s.needs if c in available}, key=profile.metric_names.index)
    json_metrics = stored if args.metrics else profile.metric_names
    columns = sorted(set(json_metrics) | set(stored), key=profile.metric_names.index)
    if by == "tree":
        tv = tree_view(
            profile,
            TreeOptions(depth=args.depth, include=args.include, exclude=args.exclude, threshold_pct=args.threshold),
            metrics=columns,
        )
        if args.json:
            dump(tree_json(tv, json_metrics), depth_hint=max(tv.depth, default=0))
        else:
            render_tree(make_console(), tv, specs)
        return
    g = group(profile, by, columns)
    if args.json:
        dump(grouped_json(g))
    else:
        render_grouped(make_console(), g, specs, limit=args.limit or None)


class ViewCommand:
    name = "view"
    help = "show a profile or trace as a tree or by line, module, op or kernel"

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("profile", help="a .ksprof profile or a trace file")
        add_view_options(parser)

    def run(self, args: argparse.Namespace) -> int:
        profile = open_profile(args.profile)
        show(profile, args)
        sys.stdout.flush()
        return 0


COMMAND = ViewCommand()
