"""Brendan Gregg's folded stacks, for flamegraph.pl, inferno, speedscope and friends.

One line per node with exclusive ``time_ns``: ``frame;frame;...;frame VALUE``, outermost
frame first (the root is left out), VALUE the node's exclusive ``time_ns`` rounded to an
integer; nodes that round to 0 are left out. Frames are ``Frame.label()`` (a kernel whose name
runs on several devices or streams followed by `` [cuda:0 stream 7]``) with the
characters that would break the format percent-encoded: ``%`` -> ``%25``, ``;`` -> ``%3B``,
``\\n`` -> ``%0A``, ``\\r`` -> ``%0D``.
"""

from __future__ import annotations

from typing import TextIO

from ...model import Profile
from ._tree import distinct_labels
from .registry import Exporter, register

METRIC = "time_ns"
_ESCAPES = str.maketrans({"%": "%25", ";": "%3B", "\n": "%0A", "\r": "%0D"})


def escape(label: str) -> str:
    return label.translate(_ESCAPES)


def dump(profile: Profile, fh: TextIO) -> None:
    labels = [escape(label) for label in distinct_labels(profile)]
    frame = profile.frame.tolist()
    parent = profile.parent.tolist()
    values = profile.exclusive(METRIC).tolist()
    for node, value in enumerate(values):
        weight = round(value)
        if weight <= 0:
            continue
        stack: list[str] = []
        n = node
        while n > 0:
            stack.append(labels[frame[n]])
            n = parent[n]
        if not stack:  # time on the root itself
            stack.append(labels[frame[0]])
        stack.reverse()
        fh.write(f"{';'.join(stack)} {weight}\n")


EXPORTER = register(
    Exporter(
        name="folded",
        description="folded stacks (flamegraph.pl / inferno), weights = exclusive time_ns",
        suffix=".folded",
        dump=dump,
    )
)
