"""``kernelscope run`` under a launcher (torchrun, SLURM, MPI) and ``run --store JOB/``: where each rank's profile
goes, what its metadata says, and the job store the ranks write (collect/launcher.py, store/live.py)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ..collect.launcher import Launch, detect, distributed_info, rank_output
from ..errors import UsageError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store",
        metavar="JOB/",
        help="write the job store (docs/store.md) in this folder: each rank of a torchrun/SLURM/MPI job writes its "
        "tables there, the last one to end the merged profile and the manifest (then: kernelscope ranks JOB/)",
    )


def output_for(args: argparse.Namespace, output: str) -> str:
    """The profile this process writes: ``output`` alone; ``<stem>.<job>/<stem>.rank<R>.ksprof`` as a launcher's
    rank; ``JOB/ranks/rank<R>.ksprof`` with ``--store`` (refused, before the program runs, where it cannot go)."""
    launch = detect()
    if args.store is None:
        return output if launch is None else rank_output(output, launch)
    if args.output:
        raise UsageError("give -o or --store, not both (with --store each rank's profile goes to JOB/ranks/)")
    from ..store.live import RANKS, check_live_target

    check_live_target(args.store)
    rank = launch.rank if launch is not None else 0
    os.makedirs(os.path.join(args.store, RANKS), exist_ok=True)
    return os.path.join(args.store, RANKS, f"rank{rank}.ksprof")


def rank_metadata() -> dict[str, Any]:
    """The launch's rank, world size and job, and the program's process group where it still has one."""
    launch = detect()
    out: dict[str, Any] = launch.metadata() if launch is not None else {}
    dist = distributed_info()
    if dist:
        out.setdefault("rank", dist["rank"])
        out.setdefault("world_size", dist["world_size"])
        out["distributedInfo"] = dist
    return out


def write_store(args: argparse.Namespace, profile: Any) -> None:
    """``--store``: this rank's tables into the job store; the rank that completes the world finishes it."""
    if args.store is None:
        return
    from ..store.live import write_rank

    launch: Launch | None = detect()
    meta = profile.metadata
    rank = int(meta.get("rank", 0))
    world = meta.get("world_size") or (launch.world_size if launch is not None else None) or 1
    backend = (meta.get("distributedInfo") or {}).get("backend")
    written = write_rank(args.store, profile, rank, int(world), backend)
    if written.complete:
        print(
            f"kernelscope: job store {args.store} complete ({written.world_size} rank(s); kernelscope ranks {args.store})",
            file=sys.stderr,
        )
    elif written.finished:
        print(f"kernelscope: rank {rank} written to the job store {args.store} (complete)", file=sys.stderr)
    else:
        print(
            f"kernelscope: rank {rank} written to the job store {args.store} "
            f"({len(written.present)} of {written.world_size} ranks so far)",
            file=sys.stderr,
        )


__all__ = ["add_arguments", "output_for", "rank_metadata", "write_store"]
