"""``kernelscope import TRACE_OR_DIR... [-o OUT.ksprof | --store JOB/]``: trace files -> profiles or a job store.

One trace: ``OUT`` (default: the trace's name with ``.ksprof`` in the current folder).
Several traces (one per rank): imported in parallel processes; each rank is saved as
``OUT.rank<R>.ksprof`` and the merged profile (each rank under ``[rank R]``) as ``OUT``
(default ``merged.ksprof``). Nothing is written unless every trace imported.
With ``--store JOB/``: the whole job on Dask (a local cluster, or ``--scheduler ADDRESS``), written
as the columnar store (docs/store.md); a file that fails is named and skipped, the rest completes.
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
from ..model.io import is_ksprof, is_store
from ..render.format import fmt_ns
from ..render.json_view import dump
from ..trust.limits import refuse_special
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
    return _warnings_line(path, profile.metadata.get("import_warnings") or {})


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
  kernelscope import traces/ --store job/         # the whole job on a local Dask cluster, as a store
  kernelscope import traces/ --store /shared/job/ --scheduler tcp://head:8786   # on a running Dask cluster
  kernelscope ranks job/                          # cross-rank analysis of the store
  kernelscope view trace.json.gz                  # no import needed just to look
  kernelscope import trace.json.gz --json | jq -r '.profiles[].path'

Odd events the importer tolerates are counted and summarised on stderr as one warning line per trace.
"""


class ImportCommand:
    name = "import"
    help = "import trace files (Kineto JSON(.gz), Proton/hatchet, JAX XPlane .xplane.pb) into .ksprof profiles"

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.epilog = EXAMPLES
        parser.add_argument(
            "traces", nargs="+", metavar="TRACE_OR_DIR", help="trace files or folders of them; several = one per rank"
        )
        parser.add_argument("-o", "--output", metavar="OUT.ksprof", help="profile to write (merged one for several)")
        parser.add_argument(
            "--json", action="store_true", help="print the documented JSON (schema 1) of what was written, not lines"
        )
        parser.add_argument(
            "-j", "--jobs", type=positive_int, default=2, metavar="N", help="parallel import processes (default: 2)"
        )
        store = parser.add_argument_group("job store (docs/store.md)")
        store.add_argument("--store", metavar="JOB/", help="write the job as a columnar store in this folder")
        store.add_argument(
            "--scheduler", metavar="ADDRESS", help="with --store: a running Dask scheduler (default: a local cluster)"
        )
        store.add_argument(
            "--workers", type=positive_int, metavar="N", help="with --store: local Dask workers (default: one per core)"
        )
        store.add_argument(
            "--memory-limit",
            default="auto",
            metavar="SIZE",
            help="with --store: memory limit per local worker, e.g. 4GB (default: memory / workers)",
        )

    def run(self, args: argparse.Namespace) -> int:
        traces = expand_inputs(list(args.traces))
        for path in traces:
            refuse_special(path)  # a FIFO or device would block or never end
        if args.store is not None:
            return run_store(args, traces)
        if args.scheduler or args.workers:
            raise UsageError("--scheduler and --workers need --store JOB/")
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


def expand_inputs(paths: list[str]) -> list[str]:
    """Folders become the trace files directly in them (sorted); files stay as given."""
    out: list[str] = []
    for path in paths:
        if os.path.isdir(path) and not is_store(path):
            found = sorted(
                os.path.join(path, n)
                for n in os.listdir(path)
                if n.endswith(_TRACE_SUFFIXES) and os.path.isfile(os.path.join(path, n))
            )
            if not found:
                raise UsageError(f"{path}: a folder with no trace files ({', '.join(_TRACE_SUFFIXES)})")
            out.extend(found)
        else:
            out.append(path)
    return out


def run_store(args: argparse.Namespace, traces: list[str]) -> int:
    from ..store.job import import_job

    if args.output:
        raise UsageError("--store writes JOB/merged.ksprof itself; drop -o")
    for path in traces:
        if is_store(path) or is_ksprof(path) or path.endswith(".ksprof"):
            raise UsageError(f"{path}: is already imported; every verb reads it directly (kernelscope view {path})")
    result = import_job(traces, args.store, args.scheduler, args.workers, args.memory_limit)
    for path, warnings in result.warnings:
        line = _warnings_line(path, warnings)
        if line:
            print(line, file=sys.stderr)
    for skipped in result.manifest.skipped:
        print(f"kernelscope: skipped {skipped.reason}", file=sys.stderr)
    ranks = len(result.manifest.ranks)
    peaks = sorted(result.peak_rss_kb.values())
    if args.json:
        store = {
            "ranks": sorted(int(r["rank"]) for r in result.manifest.ranks),
            "rank_files": len(traces),
            "skipped": [s.reason for s in result.manifest.skipped],
            "workers": result.workers,
            "peak_rss_bytes_per_worker": peaks[-1] * 1024 if peaks else None,
        }
        dump({"schema": 1, "output": args.store, "store": store})
        return 0
    memory = f"; peak memory per worker {fmt_bytes(peaks[-1] * 1024)}" if peaks else ""
    print(
        f"wrote {args.store}: {ranks} of {len(traces)} rank files imported"
        + (f", {len(result.manifest.skipped)} skipped (named above)" if result.manifest.skipped else "")
        + f"; {result.workers} Dask worker{'s' if result.workers != 1 else ''}{memory}"
    )
    print(summary_line(os.path.join(args.store, "merged.ksprof"), result.merged))
    return 0


def _warnings_line(path: str, warnings: dict[str, int]) -> str | None:
    if not warnings:
        return None
    parts = [f"{n:,} {what}" for what, n in sorted(warnings.items(), key=lambda kv: -int(kv[1]))]
    return f"kernelscope: warning: {path}: " + "; ".join(parts)


def fmt_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


COMMAND = ImportCommand()
