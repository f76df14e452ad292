"""The package version (one place, below every layer: any module may read it)."""

__version__ = "0.1.0"
