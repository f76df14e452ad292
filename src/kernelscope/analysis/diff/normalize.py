"""What stays the same between two runs of the same program: normalised frame identities.

Two runs differ in things that do not change what ran: absolute paths, line numbers when code
above moved, kernel name suffixes (``triton_poi_fused_add_0`` vs ``_3``), Inductor graph ids,
hashes in generated file names, template arguments, profiler step numbers and rank prefixes.
A :class:`Key` keeps what identifies a frame and drops the rest. Python frames are keyed by file
and function only; their lines are paired by :mod:`.unify` (by function and content).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from ...model import Frame, FrameKind

_SITE = re.compile(r".*/(?:site|dist)-packages/")
_INDUCTOR_FILE = re.compile(r".*/torchinductor_[^/]*/.*")
_HASH = re.compile(r"(?<![A-Za-z0-9])(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}(?![A-Za-z0-9])|[a-z0-9]{24,}")
_GRAPH_PREFIX = re.compile(r"^graph_\d+_")
_NUM_SUFFIX = re.compile(r"(?:_\d+)+$")
_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True, slots=True)
class Key:
    kind: FrameKind
    name: str
    file: str = ""
    module: str = ""
    device: str = ""


def normal_file(path: str, cwd: str | None = None) -> str:
    """A path both runs agree on: relative to the working directory or to site-packages."""
    if not path:
        return ""
    if _INDUCTOR_FILE.match(path):
        return "<inductor generated>"
    site = _SITE.sub("", path)
    if site != path:
        return site
    base = cwd if cwd is not None else os.getcwd()
    if os.path.isabs(path) and path.startswith(base.rstrip("/") + "/"):
        return os.path.relpath(path, base)
    return path


def _strip_arguments(name: str) -> str:
    """Drop a trailing argument list ``foo(int, float*)``; keep ``Memcpy HtoD (Pageable -> Device)``."""
    if not name.endswith(")"):
        return name
    depth = 0
    for i in range(len(name) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(name[i], 0)
        if depth == 0:
            return name[:i] if i > 0 and not name[i - 1].isspace() else name
    return name


def _strip_balanced(name: str, open_: str, close: str) -> str:
    out: list[str] = []
    depth = 0
    for ch in name:
        if ch == open_:
            depth += 1
        elif ch == close and depth:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def normal_kernel(name: str) -> str:
    """Kernel names without hashes, numeric suffixes, graph ids, arguments and template noise."""
    text = name.strip()
    text = text.removeprefix("void ")
    text = _strip_arguments(text)
    text = _strip_balanced(text, "<", ">")
    text = _GRAPH_PREFIX.sub("", text.strip())
    text = _HASH.sub("#", text)
    text = _NUM_SUFFIX.sub("", text)
    return text.strip() or name


def normal_device(device: str) -> str:
    """``rank3/cuda:0`` → ``cuda:0``: ranks are matched by role, not by number."""
    return device.rsplit("/", 1)[-1]


def key_of(frame: Frame, cwd: str | None = None) -> Key:
    k = frame.kind
    if k is FrameKind.PYTHON:
        return Key(k, frame.name, normal_file(frame.file, cwd))
    if k is FrameKind.KERNEL:
        return Key(k, normal_kernel(frame.name), device=normal_device(frame.device))
    if k is FrameKind.REGION and frame.cls:
        # a compiled region by its name, not its torch.compile line: a live run knows the line, an imported
        # trace does not, and both ran the same compiled code
        return Key(k, frame.label())
    if k in (FrameKind.SCOPE, FrameKind.REGION):
        return Key(k, _DIGITS.sub("#", frame.name))
    if k is FrameKind.PART:
        return Key(k, frame.name, normal_file(frame.file, cwd), frame.module)
    if k is FrameKind.MODULE:
        return Key(k, frame.name)
    return Key(k, frame.name)
