"""Exporters: a Profile written in another tool's format. One format is one module.

Each module builds an :class:`Exporter` (name, description, default suffix and a
``dump(profile, text_stream)`` function) and passes it to :func:`register`;
``_all`` imports them. ``Exporter.write`` takes an open text stream or a path;
a path is written atomically (temporary file in the same folder, then renamed).
"""

from .registry import Exporter, exporters, find_exporter, register

__all__ = ["Exporter", "exporters", "find_exporter", "register"]
