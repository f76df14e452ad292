"""Opened inputs, kept between calls: an agent asks several questions of the same file.

Entries are keyed by the file's real path, size and modification time, so a rewritten profile is
read again; at most :data:`KEEP` files stay open. Derived views (the simplified tree, groupings) are
cached per entry under a name. Nothing here writes anywhere.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..errors import KernelscopeError, UnknownFormatError
from ..inputs import open_profile
from ..model import Profile
from ..model.io import STORE_MANIFEST, is_store
from .failure import ToolFailure

KEEP = 4
T = TypeVar("T")


@dataclass
class Opened:
    path: str
    profile: Profile
    derived: dict[str, Any] = field(default_factory=dict)

    def get(self, name: str, make: Callable[[], T]) -> T:
        if name not in self.derived:
            self.derived[name] = make()
        value: T = self.derived[name]
        return value


_cache: OrderedDict[tuple[str, int, int], Opened] = OrderedDict()
_lock = threading.Lock()


def stat_key(path: str) -> tuple[str, int, int]:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ToolFailure("no_such_file", f"{path}: no such file", path=path) from None
    except OSError as exc:
        raise ToolFailure("bad_input", f"{path}: cannot read ({exc.strerror or exc})", path=path) from None
    if os.path.isdir(path):
        if not is_store(path):
            raise ToolFailure(
                "bad_input", f"{path}: a folder that is not a job store; give a profile, a trace or a store", path=path
            )
        st = os.stat(os.path.join(path, STORE_MANIFEST))  # a store changes when its manifest does
    return (os.path.realpath(path), st.st_size, st.st_mtime_ns)


def opened(path: str) -> Opened:
    """The profile at ``path`` (a .ksprof or any trace kernelscope imports), read once."""
    key = stat_key(path)
    with _lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit
    try:
        profile = open_profile(path)
    except KernelscopeError as exc:
        raise _input_failure(path, exc) from None
    entry = Opened(path, profile)
    with _lock:
        _cache[key] = entry
        while len(_cache) > KEEP:
            _cache.popitem(last=False)
    return entry


def _input_failure(path: str, exc: KernelscopeError) -> ToolFailure:
    code = "trace_format_unknown" if isinstance(exc, UnknownFormatError) else "bad_input"
    return ToolFailure(code, str(exc), path=path)
