"""The tool modules; importing this package registers every tool (``registry.tools()``)."""

from . import analyses, jobs, profiles  # noqa: F401
