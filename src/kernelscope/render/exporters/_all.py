"""Imports every built-in exporter module so that each registers itself (one line per format)."""

from __future__ import annotations

from . import chrome, folded, hatchet, pprof, proton, speedscope  # noqa: F401
