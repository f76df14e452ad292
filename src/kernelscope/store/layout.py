"""Where a store keeps what, its manifest, and what makes two imports the same job.

A store is a folder: ``store.json`` (the manifest, written last), ``merged.ksprof`` and one folder per
table of ``schema.TABLES`` partitioned by rank (``keyed/rank=3/part-0.parquet``, hive style, so DuckDB
and pyarrow read the rank from the path).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from ..errors import BadInputError
from ..model.io import STORE_MANIFEST
from ..trust.limits import MAX_METADATA_BYTES
from .schema import SCHEMA_VERSION, TABLES

MANIFEST = STORE_MANIFEST
MERGED = "merged.ksprof"
FORMAT = "kernelscope-store"


def rank_file(root: str, table: str, rank: int) -> str:
    return os.path.join(root, table, f"rank={rank}", "part-0.parquet")


def job_signature(metadata: dict[str, Any]) -> dict[str, Any]:
    """What every rank of one job shares: the world size, backend and NCCL version Kineto recorded."""
    dist = metadata.get("distributedInfo")
    out: dict[str, Any] = {}
    if isinstance(dist, dict):
        for key in ("world_size", "backend", "nccl_version"):
            if key in dist and isinstance(dist[key], (int, str)):
                out[key] = dist[key]
    return out


@dataclass(frozen=True)
class Skipped:
    path: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "reason": self.reason}


@dataclass(frozen=True)
class Manifest:
    signature: dict[str, Any]
    sources: tuple[str, ...]  # every file given, as given (the job's identity with the signature)
    ranks: tuple[dict[str, Any], ...]  # {"rank", "source", "import_warnings"}
    skipped: tuple[Skipped, ...] = ()
    schema_version: int = SCHEMA_VERSION
    extra: dict[str, Any] = field(default_factory=dict)
    # every installed file (relative path) -> {"size", "rows"?}: what integrity.check_store holds it against
    files: dict[str, dict[str, Any]] = field(default_factory=dict)

    def same_job(self, other: Manifest) -> bool:
        names = {os.path.basename(s) for s in self.sources}
        return self.signature == other.signature and names == {os.path.basename(s) for s in other.sources}

    def describe(self) -> str:
        world = self.signature.get("world_size")
        files = f"{len(self.sources)} files"
        return f"a job of {files}" + (f", world size {world}" if world is not None else "")

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "schema_version": self.schema_version,
            "tables": sorted(TABLES),
            "job": {"signature": self.signature, "sources": list(self.sources)},
            "ranks": list(self.ranks),
            "skipped": [s.to_json() for s in self.skipped],
            "files": self.files,
            **self.extra,
        }

    @staticmethod
    def from_json(data: dict[str, Any]) -> Manifest:
        """The manifest, its shape checked (``TypeError``/``ValueError`` name what is wrong)."""
        job = data["job"]
        ranks = data["ranks"]
        if not isinstance(ranks, list) or not all(
            isinstance(r, dict) and type(r.get("rank")) is int and r["rank"] >= 0 for r in ranks
        ):
            raise TypeError("ranks is not a list of {rank: number, ...}")
        if len({r["rank"] for r in ranks}) != len(ranks):
            raise ValueError("a rank is listed twice")
        if not isinstance(job, dict) or not isinstance(job.get("sources"), list):
            raise TypeError("job.sources is not a list")
        files = data.get("files", {})
        if not isinstance(files, dict) or not all(isinstance(v, dict) for v in files.values()):
            raise TypeError("files is not an object of {size, rows}")
        skipped = data.get("skipped", [])
        if not isinstance(skipped, list) or not all(isinstance(s, dict) for s in skipped):
            raise TypeError("skipped is not a list")
        return Manifest(
            signature=dict(job["signature"]),
            sources=tuple(str(s) for s in job["sources"]),
            ranks=tuple(ranks),
            skipped=tuple(Skipped(str(s["path"]), str(s["reason"])) for s in skipped),
            schema_version=int(data["schema_version"]),
            files={str(k): dict(v) for k, v in files.items()},
        )


def read_manifest(root: str) -> Manifest:
    path = os.path.join(root, MANIFEST)
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.loads(fh.read(MAX_METADATA_BYTES + 1))
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError("format")
        manifest = Manifest.from_json(data)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        raise BadInputError(f"{root}: damaged kernelscope store manifest ({MANIFEST}: {exc})") from None
    if manifest.schema_version != SCHEMA_VERSION:
        raise BadInputError(
            f"{root}: store schema version {manifest.schema_version}; this kernelscope reads version "
            f"{SCHEMA_VERSION} (re-import the traces with this version)"
        )
    return manifest


def write_manifest(root: str, manifest: Manifest) -> None:
    tmp = os.path.join(root, f".{MANIFEST}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(manifest.to_json(), fh, indent=1)
    os.replace(tmp, os.path.join(root, MANIFEST))


__all__ = [
    "MANIFEST",
    "MERGED",
    "Manifest",
    "Skipped",
    "job_signature",
    "rank_file",
    "read_manifest",
    "write_manifest",
]
