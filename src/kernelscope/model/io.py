"""The ``.ksprof`` file: a zip archive of JSON (frames, metadata) and ``.npy`` columns.

Compact (deflated columns), lossless (floats and ints are stored as their
binary values), versioned (``header.json`` carries the schema) and written
atomically: the archive is written to a temporary file in the target folder
and renamed over the target only once complete.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
import zipfile
import zlib
from typing import Any

import numpy as np

from ..errors import BadInputError
from .frames import Frame
from .profile import Profile
from .timeline import Timeline, Track

FORMAT = "kernelscope-profile"
SCHEMA = 1
MAGIC = b"PK\x03\x04"


def _npy(array: np.ndarray[Any, Any]) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(array), allow_pickle=False)
    return buf.getvalue()


def to_bytes(profile: Profile) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as zf:
        header = {"format": FORMAT, "schema": SCHEMA, "metrics": list(profile.metrics)}
        zf.writestr("header.json", json.dumps(header))
        zf.writestr("frames.json", json.dumps([f.to_json() for f in profile.frames], separators=(",", ":")))
        zf.writestr("metadata.json", json.dumps(profile.metadata, separators=(",", ":"), default=str))
        zf.writestr("nodes/parent.npy", _npy(profile.parent))
        zf.writestr("nodes/frame.npy", _npy(profile.frame))
        for i, col in enumerate(profile.metrics.values()):
            zf.writestr(f"metrics/{i}.npy", _npy(col))
        if profile.timeline is not None:
            tl = profile.timeline
            zf.writestr("timeline/tracks.json", json.dumps([t.to_json() for t in tl.tracks]))
            for name, col in tl.columns().items():
                zf.writestr(f"timeline/{name}.npy", _npy(col))
    return buf.getvalue()


def save(profile: Profile, path: str | os.PathLike[str]) -> None:
    """Write atomically: a crash or Ctrl-C leaves either the old file or the new one."""
    data = to_bytes(profile)
    target = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(target))
    fd, tmp = tempfile.mkstemp(prefix=".ksprof-", suffix=".tmp", dir=folder)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def is_ksprof(path: str | os.PathLike[str]) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == MAGIC and zipfile.is_zipfile(path)
    except OSError:
        return False


def load(path: str | os.PathLike[str]) -> Profile:
    name = os.fspath(path)
    try:
        with zipfile.ZipFile(name) as zf:
            return _read(zf, name)
    except FileNotFoundError:
        raise BadInputError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise BadInputError(f"{name}: is a directory, not a profile") from None
    except BadInputError:
        raise
    except (zipfile.BadZipFile, KeyError, ValueError, TypeError, EOFError, OSError, json.JSONDecodeError) as exc:
        raise BadInputError(f"{name}: corrupt kernelscope profile ({exc.__class__.__name__}: {exc})") from None
    except (
        zlib.error,
        NotImplementedError,
        IndexError,
        AttributeError,
        RecursionError,
        MemoryError,
        OverflowError,
    ) as exc:
        # flipped bytes inside deflated data, or JSON of the wrong shape
        raise BadInputError(f"{name}: corrupt kernelscope profile ({exc.__class__.__name__}: {exc})") from None


def from_bytes(data: bytes, name: str = "<bytes>") -> Profile:
    """The profile ``to_bytes`` wrote; ``name`` names it in errors."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            return _read(zf, name)
    except BadInputError:
        raise
    except (zipfile.BadZipFile, KeyError, ValueError, TypeError, EOFError, zlib.error, json.JSONDecodeError) as exc:
        raise BadInputError(f"{name}: corrupt kernelscope profile ({exc.__class__.__name__}: {exc})") from None


def _read(zf: zipfile.ZipFile, name: str) -> Profile:
    header = json.loads(zf.read("header.json"))
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise BadInputError(f"{name}: not a kernelscope profile")
    schema = header.get("schema")
    if not isinstance(schema, int) or schema > SCHEMA:
        raise BadInputError(
            f"{name}: profile schema {schema} is newer than this kernelscope understands ({SCHEMA}); upgrade kernelscope"
        )

    def arr(member: str) -> np.ndarray[Any, Any]:
        out: np.ndarray[Any, Any] = np.load(io.BytesIO(zf.read(member)), allow_pickle=False)
        return out

    frames = tuple(Frame.from_json(f) for f in json.loads(zf.read("frames.json")))
    metadata = json.loads(zf.read("metadata.json"))
    metrics = {m: arr(f"metrics/{i}.npy").astype(np.float64, copy=False) for i, m in enumerate(header["metrics"])}
    timeline = None
    if "timeline/tracks.json" in zf.namelist():
        tracks = tuple(Track.from_json(t) for t in json.loads(zf.read("timeline/tracks.json")))
        cols = {
            c: arr(f"timeline/{c}.npy")
            for c in ("node", "track", "start_ns", "dur_ns", "category", "flags", "correlation")
        }
        timeline = Timeline.from_columns(cols, tracks)
    profile = Profile(
        frames=frames,
        parent=arr("nodes/parent.npy").astype(np.int32, copy=False),
        frame=arr("nodes/frame.npy").astype(np.int32, copy=False),
        metrics=metrics,
        metadata=metadata,
        timeline=timeline,
    )
    n = len(profile)
    if n == 0 or profile.frame.shape != (n,) or any(c.shape != (n,) for c in metrics.values()):
        raise BadInputError(f"{name}: corrupt kernelscope profile (column lengths differ)")
    if int(profile.frame.max()) >= len(frames) or int(profile.parent.max()) >= n or int(profile.frame.min()) < 0:
        raise BadInputError(f"{name}: corrupt kernelscope profile (indices out of range)")
    if profile.parent[0] != -1 or (n > 1 and not bool(np.all(profile.parent[1:] < np.arange(1, n)))):
        raise BadInputError(f"{name}: corrupt kernelscope profile (a node's parent does not precede it)")
    if n > 1 and int(profile.parent[1:].min()) < 0:
        raise BadInputError(f"{name}: corrupt kernelscope profile (a node without a parent)")
    return profile
