"""``kernelscope import TRACE... [-o OUT.ksprof]``: trace files -> profile files.

One trace: ``OUT`` (default: the trace's name with ``.ksprof`` in the current folder).
Several traces (one per rank): imported in parallel processes; each rank is saved as
``OUT.rank<R>.ksprof`` and the merged profile (each rank under ``[rank R]``) as ``OUT``
(default ``merged.ksprof``). Nothing is written unless every trace imported.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ..analysis.summary import time_meaning
from ..errors import UsageError
from ..importers.multirank import import_ranks, merge_ranks, ranks_of
from ..model import Profile, save
from ..model.io import is_ksprof
from ..render.format import fmt_ns
from ..render.json_view import dump
from .validate import positive_int

_TRACE_SUFFIXES = (".json.gz", ".json", ".hatchet", ".gz", ".pb")


def default_output(traces: list[str]) -> str:
    if len(traces) > 1:
        return "merged.ksprof"
    base = os.path.basename(traces[0])
    for suffix in _TRACE_SUFFIXES:
        if base.endswith(suffix):
            base = base[: -len(suffix)]
            break
    return (base or "profile") + ".ksprof"


def rank_output(out: str, rank: int) -> str:
    stem = out[: -len(".ksprof")] if out.endswith(".ksprof") else out
    return f"{stem}.rank{rank}.ksprof"


def warning_line(path: str, profile: Profile) -> str | None:
    warnings = profile.metadata.get("import_warnings") or {}
    if not warnings:
        return None
    parts = [f"{n:,} {what}" for what, n in sorted(warnings.items(), key=lambda kv: -int(kv[1]))]
    return f"kernelscope: warning: {path}: " + "; ".join(parts)


def summary_line(out: str, profile: Profile) -> str:
    tl = profile.timeline
    rows = len(tl) if tl is not None else 0
    time = fmt_ns(profile.total("time_ns"))
    return f"wrote {out}: {len(profile):,} contexts, {rows:,} timeline rows, {time} of {time_meaning(profile)}"


def written_json(out: str, profile: Profile, trace: str | None, rank: int | None) -> dict[str, Any]:
    """One written profile as ``import --json`` reports it (and its text line)."""
    tl = profile.timeline
    return {
        "path": out,
        "trace": trace,
        "rank": rank,
        "contexts": len(profile),
        "timeline_rows": len(tl) if tl is not None else 0,
        "time_ns": profile.total("time_ns"),
        "time_meaning": time_meaning(profile),
        "line": summary_line(out, profile),
    }


EXAMPLES = """\
examples:
  kernelscope import trace.json.gz                # writes trace.ksprof here
  kernelscope import rank*.json.gz -o run.ksprof  # run.rank<R>.ksprof per rank and the merged run.ksprof
  kernelscope view trace.json.gz                  # no import needed just to look
  kernelscope import trace.json.gz --json | jq -r '.profiles[].path'

Odd events the importer tolerates are counted and summarised on stderr as one warning line per trace.
"""


class ImportCommand:
    name = "import"
    help = "import trace files (Kineto JSON(.gz), Proton/hatchet, JAX XPlane .xplane.pb) into .ksprof profiles"

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.epilog = EXAMPLES
        parser.add_argument("traces", nargs="+", metavar="TRACE", help="trace files; several = one per rank")
        parser.add_argument("-o", "--output", metavar="OUT.ksprof", help="profile to write (merged one for several)")
        parser.add_argument(
            "--json", action="store_true", help="print the documented JSON (schema 1) of what was written, not lines"
        )
        parser.add_argument(
            "-j", "--jobs", type=positive_int, default=2, metavar="N", help="parallel import processes (default: 2)"
        )

    def run(self, args: argparse.Namespace) -> int:
        traces: list[str] = list(args.traces)
        if args.jobs < 1:
            raise UsageError("--jobs must be at least 1")
        out = args.output or default_output(traces)
        if os.path.isdir(out):
            raise UsageError(f"{out}: is a directory; give a file name for -o")
        for path in traces:
            if is_ksprof(path) or path.endswith(".ksprof"):
                raise UsageError(
                    f"{path}: is already a kernelscope profile; every verb reads it directly (kernelscope view {path})"
                )
        profiles = import_ranks(traces, workers=args.jobs)
        for path, prof in zip(traces, profiles, strict=True):
            line = warning_line(path, prof)
            if line:
                print(line, file=sys.stderr)
        written: list[dict[str, Any]] = []
        if len(profiles) == 1:
            save(profiles[0], out)
            written.append(written_json(out, profiles[0], traces[0], None))
        else:
            ranks = ranks_of(traces, profiles)
            merged = merge_ranks(profiles, ranks)
            for trace, prof, rank in zip(traces, profiles, ranks, strict=True):
                path = rank_output(out, rank)
                save(prof, path)
                written.append(written_json(path, prof, trace, rank))
            save(merged, out)
            written.append(written_json(out, merged, None, None))
        if args.json:
            dump({"schema": 1, "output": out, "profiles": written})
        else:
            for w in written:
                print(w["line"])
        return 0


COMMAND = ImportCommand()
