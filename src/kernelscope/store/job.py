"""``import --store``: a whole job's rank traces imported on Dask, written as a store.

Each file is one task (``work.import_rank``) on a Dask cluster: a local one by default (one worker process per
core, a memory limit per worker, one thread each since an import is single-threaded Python), or a running one
given by its scheduler address. Workers write their tables to a staging folder beside the store; once every
task ended, the client keeps the ranks of the job (a file that failed, whose worker died (run once more alone:
a dying worker takes every task it held), that belongs to another job or repeats a rank is named and skipped),
moves their tables into place, writes the merged profile and, last, the manifest. A store of another job is
never touched.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import BadInputError, UsageError
from ..importers.multirank import merge_ranks, rank_in
from ..model import Profile, load, save
from ..model.io import is_store
from .integrity import claim_staging, clean_staging, expected_files, fingerprint
from .layout import MERGED, Manifest, Skipped, rank_file, read_manifest, write_manifest
from .schema import TABLES
from .work import RankOutcome, import_rank

Task = Callable[[int, str, str], RankOutcome]


@dataclass(frozen=True)
class JobResult:
    root: str
    manifest: Manifest
    merged: Profile
    workers: int
    peak_rss_kb: dict[str, int] = field(default_factory=dict)  # worker address -> peak resident memory
    warnings: tuple[tuple[str, dict[str, int]], ...] = ()  # (path, import warnings) per kept rank


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def check_target(root: str) -> Manifest | None:
    """The store already at ``root`` (None when new or empty); refuse anything else, touching nothing."""
    if os.path.exists(root) and not os.path.isdir(root):
        raise UsageError(f"{root}: exists and is not a folder; give --store a new or empty folder")
    if is_store(root):
        return read_manifest(root)
    if os.path.isdir(root) and os.listdir(root):
        raise UsageError(f"{root}: a folder that is not a kernelscope store; give --store a new or empty folder")
    return None


@contextlib.contextmanager
def dask_client(scheduler: str | None, workers: int, memory_limit: str) -> Iterator[Any]:
    import dask
    from distributed import Client, LocalCluster

    if scheduler:
        try:
            client = Client(scheduler, timeout="10s")  # type: ignore[no-untyped-call]
        except (OSError, TimeoutError, ValueError) as exc:
            raise BadInputError(f"--scheduler {scheduler}: no Dask scheduler answered there ({exc})") from None
        with client:
            yield client
        return
    # a task whose worker died is not retried on another worker: the file is reported and skipped; and a worker
    # holds no task beyond the one it runs (worker-saturation 1.0: by default it takes one more, queued, which
    # then failed with the file that killed the worker)
    config = {"distributed.scheduler.allowed-failures": 0, "distributed.scheduler.worker-saturation": 1.0}
    with dask.config.set(config):
        cluster = LocalCluster(  # type: ignore[no-untyped-call]
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            memory_limit=memory_limit,
            dashboard_address=":0",  # no fixed port: several imports may run at once
            scheduler_kwargs={"dashboard": False},
            silence_logs=logging.CRITICAL,
        )
        with cluster, Client(cluster) as client:  # type: ignore[no-untyped-call]
            yield client


def run_tasks(client: Any, paths: Sequence[str], staging: str, task: Task = import_rank) -> list[RankOutcome]:
    """Every file's outcome. A worker that dies takes down every task it held, not only the file that killed it
    (Dask may hand a worker more than one): each file whose worker died is run once more, alone, and is
    skipped only if its worker dies again."""
    outcomes = {o.index: o for o in _run(client, paths, range(len(paths)), staging, task)}
    for i in [i for i, o in outcomes.items() if o.died]:
        (outcomes[i],) = _run(client, paths, [i], staging, task)
    return sorted(outcomes.values(), key=lambda o: o.index)


def _run(client: Any, paths: Sequence[str], which: Sequence[int], staging: str, task: Task) -> list[RankOutcome]:
    from distributed import as_completed

    futures = {client.submit(task, i, paths[i], staging, pure=False, retries=0): i for i in which}
    outcomes: list[RankOutcome] = []
    for fut in as_completed(list(futures)):  # type: ignore[no-untyped-call]
        i = futures[fut]
        try:
            outcomes.append(fut.result())
        except Exception as exc:  # KilledWorker, a lost connection: the worker is gone, the job goes on
            what = type(exc).__name__
            error = f"{paths[i]}: the worker importing it died ({what})"
            outcomes.append(RankOutcome(i, paths[i], error=error, died=True))
        fut.release()
    return outcomes


def worker_peaks(client: Any) -> dict[str, int]:
    from .work import peak_kb

    try:
        return {str(k): int(v) for k, v in client.run(peak_kb).items()}
    except Exception:  # a cluster that will not run functions on its workers: no memory numbers
        return {}


def choose_ranks(outcomes: Sequence[RankOutcome]) -> tuple[list[tuple[RankOutcome, int]], list[Skipped]]:
    """The imported files that make up the job, with their ranks; the rest, each with why it was skipped."""
    skipped = [Skipped(o.path, o.error) for o in outcomes if o.error is not None]
    ok = [o for o in outcomes if o.imported]
    if not ok:
        return [], skipped
    sigs = Counter(json.dumps(o.signature, sort_keys=True) for o in ok)
    job_sig = sigs.most_common(1)[0][0]
    same: list[RankOutcome] = []
    for o in ok:
        if json.dumps(o.signature, sort_keys=True) == job_sig:
            same.append(o)
        else:
            skipped.append(
                Skipped(
                    o.path, f"{o.path}: of another job ({_sig(o.signature)}; the job's: {_sig(json.loads(job_sig))})"
                )
            )
    found = [rank_in(o.path, o.metadata) for o in same]
    if any(r is None for r in found):  # ranks unknown: the order given
        return [(o, i) for i, o in enumerate(same)], skipped
    kept: list[tuple[RankOutcome, int]] = []
    seen: dict[int, str] = {}
    for o, r in zip(same, found, strict=True):
        assert r is not None
        if r in seen:
            skipped.append(Skipped(o.path, f"{o.path}: rank {r} again (already in {seen[r]})"))
            continue
        seen[r] = o.path
        kept.append((o, r))
    return kept, skipped


def _sig(sig: dict[str, Any]) -> str:
    return ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in sorted(sig.items())) or "no distributed info"


def import_job(
    paths: Sequence[str],
    root: str,
    scheduler: str | None = None,
    workers: int | None = None,
    memory_limit: str = "auto",
    task: Task = import_rank,
) -> JobResult:
    existing = check_target(root)
    parent = os.path.dirname(os.path.abspath(root))
    os.makedirs(parent, exist_ok=True)
    n = max(1, min(workers or default_workers(), len(paths)))
    name = os.path.basename(os.path.abspath(root))
    clean_staging(parent, name)  # what killed imports left behind (their owners are gone)
    staging = tempfile.mkdtemp(prefix=f".{name}.staging-", dir=parent)
    try:
        claim_staging(staging)
        with dask_client(scheduler, n, memory_limit) as client:
            outcomes = run_tasks(client, paths, staging, task)
            peaks = worker_peaks(client)
            n = len(client.scheduler_info().get("workers", {})) or n
        kept, skipped = choose_ranks(outcomes)
        if not kept:
            reasons = "; ".join(s.reason for s in skipped[:3])
            raise BadInputError(f"no rank file could be imported ({reasons})")
        ranks = [
            {"rank": r, "source": o.path, "import_warnings": (o.metadata.get("import_warnings") or {})} for o, r in kept
        ]
        signature = kept[0][0].signature
        manifest = Manifest(signature, tuple(paths), tuple(ranks), tuple(skipped))
        if existing is not None and not existing.same_job(manifest):
            raise UsageError(
                f"{root}: holds another job's store ({existing.describe()}); nothing was overwritten — "
                "give --store a new folder"
            )
        # one rank at a time from the staging folder: the client holds the merged profile and one rank
        merged = merge_ranks((load(o.profile_path) for o, _r in kept), [r for _o, r in kept])
        _install(root, kept, merged, manifest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    warnings = tuple((o.path, dict(o.metadata.get("import_warnings") or {})) for o, _r in kept)
    return JobResult(root, manifest, merged, n, peaks, warnings)


def _install(root: str, kept: Sequence[tuple[RankOutcome, int]], merged: Profile, manifest: Manifest) -> None:
    os.makedirs(root, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(root, "store.json"))  # a half-replaced store is never taken for a whole one
    for table in TABLES:
        shutil.rmtree(os.path.join(root, table), ignore_errors=True)
        for o, r in kept:
            dest = rank_file(root, table, r)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            shutil.move(os.path.join(o.staged, f"{table}.parquet"), dest)
    save(merged, os.path.join(root, MERGED))
    files = {rel: fingerprint(os.path.join(root, rel)) for rel, _table, _rank in expected_files(root, manifest)}
    write_manifest(root, dataclasses.replace(manifest, files=files))


__all__ = ["JobResult", "check_target", "choose_ranks", "dask_client", "default_workers", "import_job", "run_tasks"]
