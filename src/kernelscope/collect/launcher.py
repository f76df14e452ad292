"""Launchers that start one process per rank: which rank this process is, and where its profile goes.

torchrun / ``python -m torch.distributed.run`` set ``RANK``, ``LOCAL_RANK`` and ``WORLD_SIZE``; SLURM sets
``SLURM_PROCID``, ``SLURM_LOCALID`` and ``SLURM_NTASKS``; Open MPI sets ``OMPI_COMM_WORLD_RANK``, ``..._LOCAL_RANK``
and ``..._SIZE`` (MPICH and Intel MPI: ``PMI_RANK``, ``PMI_SIZE``). torchrun is checked first: inside a SLURM
allocation that runs torchrun, torchrun's ranks are the job's. Each rank writes its own profile into one folder
per job (``<stem>.<job id>/<stem>.rank<R>.ksprof``, or ``<stem>.ranks/`` where the launcher names no job; torchrun
names each run with a random id unless given ``--rdzv-id``, shortened here to its first 8 digits), with
the rank and world size in its metadata, so ``kernelscope import`` and the job store find the rank.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# (launcher, rank, world size, local rank, job id) variables, in the order they are believed
_LAUNCHERS = (
    ("torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", ("TORCHELASTIC_RUN_ID",)),
    ("slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", ("SLURM_JOB_ID",)),
    ("mpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", ("OMPI_MCA_ess_base_jobid",)),
    ("mpi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", ("PMI_JOBID",)),
)
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)


@dataclass(frozen=True)
class Launch:
    """This process's place in a job started by a launcher."""

    launcher: str  # "torchrun" | "slurm" | "mpi"
    rank: int
    world_size: int | None
    local_rank: int | None
    job: str | None  # the launcher's job id, when it names one

    def metadata(self) -> dict[str, Any]:
        """What goes into the rank's profile (``rank`` is what ``import`` and the store read)."""
        out: dict[str, Any] = {"rank": self.rank, "launcher": self.launcher}
        if self.world_size is not None:
            out["world_size"] = self.world_size
        if self.local_rank is not None:
            out["local_rank"] = self.local_rank
        if self.job is not None:
            out["job"] = self.job
        return out


def _int(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        n = int(value.strip())
    except ValueError:
        return None
    return n if n >= 0 else None


def detect(env: Mapping[str, str] | None = None) -> Launch | None:
    """The launch this process is part of, or None when it runs alone (or a launcher's rank is not a number)."""
    env = os.environ if env is None else env
    for launcher, rank_var, size_var, local_var, job_vars in _LAUNCHERS:
        rank = _int(env.get(rank_var))
        if rank is None:
            continue
        job = next((env[v] for v in job_vars if env.get(v) and env[v] != "none"), None)
        if launcher == "slurm" and job is not None and env.get("SLURM_STEP_ID"):
            job = f"{job}.{env['SLURM_STEP_ID']}"
        return Launch(launcher, rank, _int(env.get(size_var)), _int(env.get(local_var)), job)
    return None


def job_folder(output: str, launch: Launch) -> str:
    """The folder every rank of the job writes into, beside where ``output`` would have gone."""
    folder, name = os.path.split(output)
    stem = name[: -len(".ksprof")] if name.endswith(".ksprof") else name
    job = launch.job
    if job is not None and _UUID.fullmatch(job):  # torchrun's own run id (no --rdzv-id): its first 8 digits
        job = job[:8]
    suffix = _SAFE.sub("_", job) if job else "ranks"
    return os.path.join(folder, f"{stem or 'profile'}.{suffix}")


def rank_output(output: str, launch: Launch) -> str:
    """``run.ksprof`` -> ``run.<job>/run.rank<R>.ksprof`` (the folder is created)."""
    name = os.path.basename(output)
    stem = name[: -len(".ksprof")] if name.endswith(".ksprof") else name
    folder = job_folder(output, launch)
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, f"{stem or 'profile'}.rank{launch.rank}.ksprof")


def distributed_info() -> dict[str, Any]:
    """What the program's default process group says (rank, world size, backend), when it made one."""
    import sys

    dist = sys.modules.get("torch.distributed")
    if dist is None:
        return {}
    try:
        if not (dist.is_available() and dist.is_initialized()):
            return {}
        return {"rank": dist.get_rank(), "world_size": dist.get_world_size(), "backend": str(dist.get_backend())}
    except Exception:  # a process group torn down already, or half made: nothing to add
        return {}


__all__ = ["Launch", "detect", "distributed_info", "job_folder", "rank_output"]
