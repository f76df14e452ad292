"""Errors meant for people: the CLI prints their message as one line and exits 2."""

from __future__ import annotations


class KernelscopeError(Exception):
    """Bad input or usage. The message says what is wrong and what to do."""


class BadInputError(KernelscopeError):
    """A file that cannot be read as what it claims to be."""


class UnknownFormatError(BadInputError):
    """A file that is no format kernelscope reads (neither a profile nor a known trace)."""


class UsageError(KernelscopeError):
    """A command line that asks for something that does not exist."""
