"""Imports every built-in importer module so that each registers itself (one line per format)."""

from __future__ import annotations

from . import kineto, onnxruntime, pftrace, proton, rocprof, rocprof_json, xplane  # noqa: F401
