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
from ..trust.limits import (
    MAX_ARRAY_MEMBER_BYTES,
    MAX_JSON_MEMBER_BYTES,
    MAX_METADATA_BYTES,
    read_capped,
    refuse_special,
)
from .frames import _DEFAULTS, Frame, FrameKind
from .profile import Profile
from .timeline import Category, Timeline, Track

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


STORE_MANIFEST = "store.json"


def is_store(path: str) -> bool:
    """A folder ``kernelscope import --store`` wrote (docs/store.md): its merged profile plus per-rank tables."""
    return os.path.isdir(path) and os.path.isfile(os.path.join(path, STORE_MANIFEST))


def is_ksprof(path: str | os.PathLike[str]) -> bool:
    if not os.path.isfile(path):  # a FIFO or device is never opened to look
        return False
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == MAGIC and zipfile.is_zipfile(path)
    except OSError:
        return False


def load(path: str | os.PathLike[str]) -> Profile:
    name = os.fspath(path)
    refuse_special(name)
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
        RuntimeError,  # zipfile: "File ... is encrypted, password required" (a flipped flag bit)
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
    def member(member: str, cap: int) -> bytes:
        with zf.open(member) as fh:
            return read_capped(fh, cap, f"{name}: member {member}")

    header = json.loads(member("header.json", MAX_METADATA_BYTES))
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise BadInputError(f"{name}: not a kernelscope profile")
    schema = header.get("schema")
    if not isinstance(schema, int) or schema > SCHEMA:
        raise BadInputError(
            f"{name}: profile schema {schema} is newer than this kernelscope understands ({SCHEMA}); upgrade kernelscope"
        )

    def arr(name_: str) -> np.ndarray[Any, Any]:
        out: np.ndarray[Any, Any] = np.load(io.BytesIO(member(name_, MAX_ARRAY_MEMBER_BYTES)), allow_pickle=False)
        if out.ndim != 1 or out.dtype.kind not in "biuf":
            raise BadInputError(f"{name}: corrupt kernelscope profile ({name_} is not a column of numbers)")
        return out

    frames = tuple(_frame(f, name) for f in _list(json.loads(member("frames.json", MAX_JSON_MEMBER_BYTES)), name))
    metadata = json.loads(member("metadata.json", MAX_METADATA_BYTES))
    if not isinstance(metadata, dict):
        raise BadInputError(f"{name}: corrupt kernelscope profile (metadata.json is a {type(metadata).__name__})")
    names = header.get("metrics")
    if not isinstance(names, list) or not all(isinstance(m, str) for m in names):
        raise BadInputError(f"{name}: corrupt kernelscope profile (header.json's metrics is not a list of names)")
    metrics = {m: arr(f"metrics/{i}.npy").astype(np.float64, copy=False) for i, m in enumerate(names)}
    timeline = None
    if "timeline/tracks.json" in zf.namelist():
        raw_tracks = _list(json.loads(member("timeline/tracks.json", MAX_METADATA_BYTES)), name)
        if not all(isinstance(t, dict) for t in raw_tracks):
            raise BadInputError(f"{name}: corrupt kernelscope profile (a timeline track is not an object)")
        tracks = tuple(Track.from_json(t) for t in raw_tracks)
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
    if timeline is not None:
        _check_timeline(timeline, n, name)
    return profile


def _list(value: Any, name: str) -> list[Any]:
    if not isinstance(value, list):
        raise BadInputError(f"{name}: corrupt kernelscope profile (a {type(value).__name__} where a list belongs)")
    return value


def _frame(data: Any, name: str) -> Frame:
    """A frame from its JSON, its fields' types checked (a name that is a number would break every reader)."""
    if not isinstance(data, dict) or not isinstance(data.get("kind"), str):
        raise BadInputError(f"{name}: corrupt kernelscope profile (a frame without a kind)")
    for key, default in _DEFAULTS.items():
        value = data.get(key, default)
        if type(value) is not type(default):
            raise BadInputError(f"{name}: corrupt kernelscope profile (a frame's {key} is {type(value).__name__})")
    try:
        FrameKind(data["kind"])
    except ValueError:
        raise BadInputError(f"{name}: corrupt kernelscope profile (unknown frame kind {data['kind']!r:.40})") from None
    return Frame.from_json(data)


def _check_timeline(tl: Timeline, n: int, name: str) -> None:
    """Every row names a node and a track that exist, a known category and no negative duration."""
    rows = tl.node.shape[0]
    if not rows:
        return
    bad = None
    if int(tl.node.min()) < 0 or int(tl.node.max()) >= n:
        bad = "a timeline row names a node that does not exist"
    elif int(tl.track.min()) < 0 or int(tl.track.max()) >= len(tl.tracks):
        bad = "a timeline row names a track that does not exist"
    elif int(tl.category.min()) < min(Category) or int(tl.category.max()) > max(Category):
        bad = "a timeline row has an unknown category"
    elif int(tl.dur_ns.min()) < 0:
        bad = "a timeline row has a negative duration"
    if bad is not None:
        raise BadInputError(f"{name}: corrupt kernelscope profile ({bad})")
