"""One row per structural key of a profile: the rows the store and the run history hold.

A key is the one ``kernelscope diff`` matches rows on, built from the same normalised frame
identities (:mod:`kernelscope.analysis.diff.normalize`): ``line`` → ``file:line`` with the file
relative to the working directory or site-packages, ``function`` → ``file:function``, ``module`` →
the attribute path, ``op`` → the op name, ``kernel`` → the kernel name without hashes, numeric
suffixes, template and argument lists (on a CPU-only run, ops are the kernels). Every metric sums the
exclusive values of the nodes whose innermost ``by`` context is the key, except ``count``: the calls
of the key's own frames, as the flat views count them. Nodes under no such context share the null key.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa

from ..analysis.diff.normalize import Key, key_of
from ..errors import UsageError
from ..model import Frame, FrameKind, Profile
from .schema import KEYED_SCHEMA, METRICS

BYS = ("line", "function", "module", "op", "kernel")

OwnKey = Callable[[Frame, Key], "str | None"]


def _line(frame: Frame, key: Key) -> str | None:
    if key.kind is FrameKind.PYTHON or (key.kind is FrameKind.PART and key.file):
        return f"{key.file}:{frame.line}"
    return None


def _function(frame: Frame, key: Key) -> str | None:
    return f"{key.file}:{key.name}" if key.kind is FrameKind.PYTHON else None


def _module(frame: Frame, key: Key) -> str | None:
    return key.name if key.kind is FrameKind.MODULE else None


def _op(frame: Frame, key: Key) -> str | None:
    return key.name if key.kind is FrameKind.OP else None


def _kernel(frame: Frame, key: Key) -> str | None:
    return key.name if key.kind is FrameKind.KERNEL else None


def _cpu_kernel(frame: Frame, key: Key) -> str | None:
    return key.name if key.kind in (FrameKind.KERNEL, FrameKind.OP) else None


OWN_KEY: dict[str, OwnKey] = {
    "line": _line,
    "function": _function,
    "module": _module,
    "op": _op,
    "kernel": _kernel,
}


def _own_key(profile: Profile, by: str) -> OwnKey:
    if by not in OWN_KEY:
        raise UsageError(f"unknown grouping {by!r}; choose one of: {', '.join(BYS)}")
    if by == "kernel" and profile.metadata.get("device_run") is False:
        return _cpu_kernel
    return OWN_KEY[by]


def frame_keys(profile: Profile, by: str, cwd: str | None = None) -> list[str | None]:
    """Per frame of ``profile.frames``: its own normalised ``by`` key (None when not of that kind)."""
    own = _own_key(profile, by)
    return [own(f, key_of(f, cwd)) for f in profile.frames]


def node_keys(profile: Profile, by: str, cwd: str | None = None) -> list[str | None]:
    """Per node: the normalised key of its innermost ``by`` context (None where there is none)."""
    fk = frame_keys(profile, by, cwd)
    keys: list[str | None] = [None] * len(profile)
    par = profile.parent.tolist()
    fr = profile.frame.tolist()
    for node in range(1, len(profile)):
        k = fk[fr[node]]
        keys[node] = k if k is not None else keys[par[node]]
    return keys


def keyed_rows(profile: Profile, by: str) -> pa.Table:
    """One row per normalised ``by`` key with ``by``, ``key`` and the float64 metric columns (``KEYED_SCHEMA``).

    Rows whose metrics are all zero are left out; rows are sorted by ``time_ns`` then key.
    """
    return _keyed(profile, by, None)


def _keyed(profile: Profile, by: str, cwd: str | None) -> pa.Table:
    fk = frame_keys(profile, by, cwd)
    keys = node_keys(profile, by, cwd)
    own = np.asarray([k is not None for k in fk], dtype=bool)[profile.frame] if len(profile) else np.zeros(0, bool)
    uniq: dict[str | None, int] = {}
    idx = np.fromiter((uniq.setdefault(k, len(uniq)) for k in keys), dtype=np.int64, count=len(keys))
    sums: dict[str, np.ndarray] = {}
    for m in METRICS:
        col = profile.exclusive(m)
        if m == "count":
            col = np.where(own, col, 0.0)
        s = np.zeros(len(uniq), dtype=np.float64)
        np.add.at(s, idx, col)
        sums[m] = s
    names = list(uniq)
    keep = np.zeros(len(names), dtype=bool)
    for s in sums.values():
        keep |= s != 0
    order = sorted(np.nonzero(keep)[0].tolist(), key=lambda i: (-sums["time_ns"][i], names[i] is None, names[i] or ""))
    arrays = [pa.array([by] * len(order), pa.string()), pa.array([names[i] for i in order], pa.string())]
    arrays += [pa.array(sums[m][order] if order else np.zeros(0), pa.float64()) for m in METRICS]
    return pa.Table.from_arrays(arrays, schema=KEYED_SCHEMA)


def keyed_table(profile: Profile, bys: Sequence[str] = BYS) -> pa.Table:
    """``keyed_rows`` for every grouping in ``bys``, concatenated."""
    return pa.concat_tables([keyed_rows(profile, by) for by in bys])


__all__ = ["BYS", "OWN_KEY", "frame_keys", "keyed_rows", "keyed_table", "node_keys"]
