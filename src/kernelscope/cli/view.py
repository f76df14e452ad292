"""``kernelscope view PROFILE|TRACE``: the tree, or a flat view by line/function/module/op/kernel."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..analysis.metrics import MetricSpec, parse_metrics
from ..analysis.summary import summarize
from ..analysis.views import GROUPINGS, VIEWS, Grouped, TreeOptions, TreeView, filtered, group, simplify, tree_view
from ..errors import UsageError
from ..inputs import open_profile
from ..model import Profile
from ..render.console import make_console
from ..render.format import time_unit
from ..render.header_text import render_header
from ..render.json_view import dump, grouped_json, tree_json, with_coverage
from ..render.table_text import render_grouped
from ..render.tree_text import levels_that_fit, render_tree
from .validate import fraction_pct, non_negative_int

if TYPE_CHECKING:
    from rich.console import Console

DEFAULT_METRICS = ["time/%", "count"]  # after a time column in the unit that suits the profile
TREE_THRESHOLD = 1.0
TREE_LINES = 50
_RAISE_TO = (2.0, 3.0, 5.0, 10.0, 20.0)  # thresholds tried when a tree does not fit --limit lines

EXAMPLES = """\
examples:
  kernelscope view run.ksprof                         # the tree, fitted to one screen
  kernelscope view trace.json.gz --by kernel          # a trace directly: kernels by time
  kernelscope view run.ksprof --by line --limit 0     # every source line
  kernelscope view run.ksprof --include attn --depth 4 --threshold 0
  kernelscope view run.ksprof --exclude backward      # forward only: backward time removed
  kernelscope view run.ksprof --by module -m time/ms,time/%,flops,tflop/s,avg
  kernelscope view run.ksprof --by line --json        # documented JSON, schema 1

columns: "incl" values cover a context and everything under it (tree); "self" values cover what has
that context innermost (flat views); "calls" counts calls of the frame itself; blank = undefined.
RE is searched in each context's full label: "train.py:42 forward", "blocks.0.attn (Attention)",
"aten::mm", "[backward]", a kernel's whole name.
"""


def add_view_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--by", default="tree", choices=VIEWS, help="tree, or a flat view by that context (default: tree)")
    p.add_argument(
        "-m",
        "--metrics",
        action="append",
        metavar="LIST",
        help="comma-separated columns (default: time in ms or s, time/%%, count): stored (time_ns, cpu_time_ns, "
        "count, flops, bytes, alloc_bytes, user metrics) or derived (time/ms, time/s, time/%%, avg, flop/s, "
        "tflop/s, byte/s, gbyte/s, A/B, X/s per wall second)",
    )
    p.add_argument("--sort", metavar="METRIC", help="stored metric to sort and threshold by (default: time_ns)")
    p.add_argument(
        "--threshold",
        type=fraction_pct,
        metavar="PCT",
        help=f"leave out rows under PCT%% of the total (default: {TREE_THRESHOLD:g} for the tree; for flat views "
        "rows without time)",
    )
    p.add_argument(
        "--limit",
        type=non_negative_int,
        metavar="N",
        help=f"at most N rows (default: {TREE_LINES} lines for the tree, raising the threshold to fit; "
        "40 rows for flat views; 0 = no limit)",
    )
    p.add_argument("--include", metavar="RE", help="keep only the time inside contexts whose label matches RE")
    p.add_argument("--exclude", metavar="RE", help="remove contexts matching RE and their time (totals go down)")
    p.add_argument("--hide", metavar="RE", help="tree: leave out rows matching RE but keep their time in their parents")
    p.add_argument("--depth", type=non_negative_int, metavar="N", help="tree: show at most N levels (default: all)")
    p.add_argument("--no-collapse", action="store_true", help="tree: show single-child chains frame by frame")
    p.add_argument("--per-step", action="store_true", help="keep ProfilerStep#N contexts apart (default: merged)")
    p.add_argument(
        "--per-rank",
        action="store_true",
        help="a job's merged profile: keep each rank's tree apart (default: summed over ranks; see kernelscope ranks)",
    )
    p.add_argument("--full-names", action="store_true", help="print names whole (no shortening to the width)")
    p.add_argument("--json", action="store_true", help="print the documented JSON (schema 1) instead of text")


_TREE_ONLY = (("depth", "--depth"), ("hide", "--hide"), ("no_collapse", "--no-collapse"))


@dataclass(frozen=True)
class _Plan:
    specs: list[MetricSpec]
    columns: list[str]  # stored columns the view needs
    json_metrics: list[str]


def _plan(profile: Profile, args: argparse.Namespace) -> _Plan:
    available = set(profile.metrics)
    default = [f"time/{time_unit(profile.total('time_ns'))}", *DEFAULT_METRICS]
    specs = parse_metrics(args.metrics, available, default)
    stored = sorted({c for s in specs for c in s.needs if c in available}, key=profile.metric_names.index)
    json_metrics = stored if args.metrics else profile.metric_names
    columns = sorted(set(json_metrics) | set(stored), key=profile.metric_names.index)
    if args.sort is None:  # time when the profile has it, else its first metric
        args.sort = "time_ns" if "time_ns" in available or not profile.metric_names else profile.metric_names[0]
    elif args.sort not in available:
        known = ", ".join(profile.metric_names) or "none"
        raise UsageError(f"--sort {args.sort!r}: not a stored metric of this profile; choose one of: {known}")
    return _Plan(specs, columns, json_metrics)


@dataclass(frozen=True)
class _Fitted:
    tree: TreeView
    threshold: float
    modules_collapsed: bool
    depth_cut: int | None = None  # the depth the width imposed, when it cut the tree


def _fit_tree(profile: Profile, args: argparse.Namespace, columns: list[str], levels: int) -> _Fitted:
    """The tree that fits one screen: at most ``--limit`` lines and ``levels`` deep (the width).

    Tried in order, for the asked threshold and then raised ones (2, 3, 5, 10, 20%): the tree with
    the usual collapsing, then with modules collapsed too; the last resort cuts the depth. An explicit
    ``--depth`` is kept as given.
    """
    base = filtered(profile, args.include, args.exclude)
    threshold = TREE_THRESHOLD if args.threshold is None else args.threshold
    limit = TREE_LINES if args.limit is None else args.limit
    tries = [threshold, *(t for t in _RAISE_TO if t > threshold)] if limit else [threshold]
    fixed_depth = args.depth is not None or args.full_names
    modes = [False] if args.no_collapse or fixed_depth else [False, True]

    def build(t: float, modules: bool, depth: int | None) -> TreeView:
        opts = TreeOptions(
            depth=depth,
            hide=args.hide,
            threshold_pct=t,
            sort_metric=args.sort,
            collapse=not args.no_collapse,
            collapse_modules=modules,
        )
        return tree_view(base, opts, metrics=columns)

    for t in tries:
        for modules in modes:
            tv = build(t, modules, args.depth)
            fits_depth = fixed_depth or max(tv.depth, default=0) <= levels
            if (not limit or len(tv.order) <= limit) and fits_depth:
                return _Fitted(tv, t, modules)
    # nothing fits whole: cut the depth to the width, raising the threshold only as far as needed
    modules = modes[-1]
    depth = args.depth if fixed_depth else levels
    for t in tries:
        tv = build(t, modules, depth)
        if not limit or len(tv.order) <= limit:
            break
    return _Fitted(tv, t, modules, None if fixed_depth else depth)


def _tree_notes(args: argparse.Namespace, threshold: float, asked: float, modules: bool, cut: int | None) -> list[str]:
    notes = ["incl = the context and everything under it · calls = the frame's own calls"]
    left = []
    if threshold:
        raised = f" (raised from {asked:g}% to fit {args.limit or TREE_LINES} lines)" if threshold != asked else ""
        left.append(f"rows under {threshold:g}%{raised} as (+N more: time)")
    if not args.no_collapse:
        what = "modules, scopes and frames" if modules else "chains"
        left.append(f"single-child {what} as [N hidden: …]")
    if cut is not None:
        left.append(f"levels below {cut} (to fit the width; --depth sets it) as (+N more: time)")
    if left:
        notes.append("left out: " + " · ".join(left))
    return notes


def _flat_notes(by: str) -> list[str]:
    return [f"self = what has this {by} as its innermost {by} · calls = the {by}'s own calls (blank: not recorded)"]


def _filter_note(profile: Profile, shown: Profile, args: argparse.Namespace) -> list[str]:
    if not (args.include or args.exclude):
        return []
    what = " and ".join(
        x
        for x in (f"inside /{args.include}/" if args.include else "", f"not /{args.exclude}/" if args.exclude else "")
        if x
    )
    whole = profile.total("time_ns")
    part = shown.total("time_ns")
    share = f" ({100 * part / whole:.1f}% of all time)" if whole else ""
    return [f"filtered: time {what}{share}"]


def with_defaults(args: argparse.Namespace) -> argparse.Namespace:
    """``args`` with every view option present (callers such as ``run`` set only some)."""
    p = argparse.ArgumentParser(add_help=False)
    add_view_options(p)
    return argparse.Namespace(**{**vars(p.parse_args([])), **vars(args)})


def _prepared(profile: Profile, args: argparse.Namespace) -> tuple[argparse.Namespace, _Plan, Profile]:
    args = with_defaults(args)
    if args.by != "tree":
        for attr, flag in _TREE_ONLY:
            if getattr(args, attr):
                raise UsageError(f"{flag} applies to --by tree only (this is --by {args.by})")
    plan = _plan(profile, args)
    base = simplify(profile, per_step=args.per_step, instances=args.by == "tree", per_rank=args.per_rank)
    return args, plan, base


def view_json(profile: Profile, args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    """The documented JSON of a view (schema 1) and its tree's depth (room ``dump`` needs)."""
    args, plan, base = _prepared(profile, args)
    if args.by == "tree":
        opts = TreeOptions(
            depth=args.depth,
            include=args.include,
            exclude=args.exclude,
            hide=args.hide,
            threshold_pct=args.threshold or 0.0,
            sort_metric=args.sort,
        )
        tv = tree_view(base, opts, metrics=plan.columns)
        return with_coverage(tree_json(tv, plan.json_metrics), profile), max(tv.depth, default=0)
    g = group(filtered(base, args.include, args.exclude), args.by, plan.columns, sort_metric=args.sort)
    if args.threshold:
        g = _over_threshold(g, args.sort, args.threshold)
    return with_coverage(grouped_json(g), profile), 0


def show(profile: Profile, args: argparse.Namespace, console: Console | None = None) -> None:
    """Print the view to ``console`` (default: stdout's, make_console)."""
    if with_defaults(args).json:
        doc, depth = view_json(profile, args)
        dump(doc, depth_hint=depth)
        return
    args, plan, base = _prepared(profile, args)
    by = args.by
    console = console or make_console()
    summary = summarize(base)
    if by == "tree":
        fitted = _fit_tree(base, args, plan.columns, levels_that_fit(console.width, plan.specs))
        tv = fitted.tree
        asked = TREE_THRESHOLD if args.threshold is None else args.threshold
        totals = {name: float(col[0]) for name, col in tv.inclusive.items()}
        totals["wall_ns"] = summary.wall_ns or 0.0
        notes = _filter_note(base, tv.profile, args) + _tree_notes(
            args, fitted.threshold, asked, fitted.modules_collapsed, fitted.depth_cut
        )
        render_header(console, summary, notes)
        render_tree(console, tv, plan.specs, totals, full_names=args.full_names)
        return
    shown = filtered(base, args.include, args.exclude)
    g = group(shown, by, plan.columns, sort_metric=args.sort)
    if args.threshold is None:
        g = _over_threshold(g, args.sort, 0.0)  # by default text leaves out rows with no time at all
    elif args.threshold:
        g = _over_threshold(g, args.sort, args.threshold)
    render_header(console, summary, _filter_note(base, shown, args) + _flat_notes(by))
    limit = 40 if args.limit is None else args.limit
    totals = {**g.total, "wall_ns": summary.wall_ns or 0.0}
    render_grouped(console, g, plan.specs, limit=limit or None, full_names=args.full_names, totals=totals)


def _over_threshold(g: Grouped, metric: str, pct: float) -> Grouped:
    """Rows at or over ``pct``% of the total of ``metric``; at 0%, rows where it is not zero.

    Judged by the first shown metric with a total when ``metric`` is not shown (``-m count``; at 0%, a row
    with any shown metric stays); a view never hides every row: when none passes, the first row stays.
    """
    shown = metric in g.metrics or not g.metrics
    if not shown:  # judged by the first shown metric that has a total; at 0%, any shown metric counts
        metric = next((m for m in g.metrics if g.total.get(m)), g.metrics[0])
    total = abs(g.total.get(metric, 0.0))
    keep = [
        r
        for r in g.rows
        if abs(r[1].get(metric, 0.0)) >= total * pct / 100.0
        and (pct or r[1].get(metric) or (not shown and any(r[1].get(m) for m in g.metrics)))
    ]
    if not keep and g.rows:
        keep = [g.rows[0]]
    return Grouped(g.by, g.metrics, tuple(keep), g.total, left_out=len(g.rows) - len(keep))


class ViewCommand:
    name = "view"
    help = "show where the time goes: a tree, or flat totals by line, function, module, op or kernel"

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.epilog = EXAMPLES
        parser.add_argument("profile", metavar="PROFILE|TRACE", help="a .ksprof profile or a trace file")
        add_view_options(parser)

    def run(self, args: argparse.Namespace) -> int:
        profile = open_profile(args.profile)
        show(profile, args)
        sys.stdout.flush()
        return 0


COMMAND = ViewCommand()

__all__ = ["COMMAND", "GROUPINGS", "add_view_options", "show", "view_json"]
