"""Importers: trace files recorded elsewhere (Kineto, Proton, ...) into the same Profile model."""

from .registry import Importer, find_importer, import_file, importers, register

__all__ = ["Importer", "find_importer", "import_file", "importers", "register"]
