"""The exporter registry: ``register`` at import time, ``find_exporter`` by name."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO, TextIO

from ...errors import UsageError
from ...model import Profile
from ._atomic import atomic_binary_file, atomic_text_file


@dataclass(frozen=True)
class Exporter:
    """A text format gives ``dump`` (writes to a text stream); a binary one gives ``encode`` (returns bytes)."""

    name: str  # "proton", "hatchet", ...: the value of ``export --format``
    description: str
    suffix: str  # default file suffix, e.g. ".proton.json"
    dump: Callable[[Profile, TextIO], None] | None = None
    encode: Callable[[Profile], bytes] | None = None

    def write(self, profile: Profile, target: TextIO | BinaryIO | str | os.PathLike[str]) -> None:
        """Write ``profile`` to an open stream (text, or binary for a binary format), or atomically to a path.

        A binary format written to a text stream goes to the stream's ``buffer`` (``sys.stdout``).
        """
        if self.encode is not None:
            data = self.encode(profile)
            if isinstance(target, (str, os.PathLike)):
                with atomic_binary_file(target) as bfh:
                    bfh.write(data)
                return
            raw: BinaryIO = getattr(target, "buffer", None) or target  # type: ignore[assignment]
            target.flush()
            raw.write(data)
            return
        if self.dump is None:
            raise AssertionError(f"exporter {self.name!r} has neither dump nor encode")
        if isinstance(target, (str, os.PathLike)):
            with atomic_text_file(target) as fh:
                self.dump(profile, fh)
        else:
            self.dump(profile, target)  # type: ignore[arg-type]


_REGISTRY: dict[str, Exporter] = {}


def register(exporter: Exporter) -> Exporter:
    if exporter.name in _REGISTRY and _REGISTRY[exporter.name] is not exporter:
        raise ValueError(f"two exporters are named {exporter.name!r}")
    _REGISTRY[exporter.name] = exporter
    return exporter


def exporters() -> list[Exporter]:
    from . import _all  # noqa: F401  (registers the built-in exporters)

    return sorted(_REGISTRY.values(), key=lambda e: e.name)


def find_exporter(name: str) -> Exporter:
    for exp in exporters():
        if exp.name == name:
            return exp
    known = ", ".join(e.name for e in exporters())
    raise UsageError(f"unknown export format {name!r} (known: {known})")
