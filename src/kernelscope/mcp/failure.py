"""Structured tool errors: a stable ``code`` an agent can branch on and a message a person can read."""

from __future__ import annotations

from typing import Any


class ToolFailure(Exception):
    """A tool call that cannot be answered: bad option, no such key, unreadable file, ...

    ``code`` is one of :data:`CODES`; ``details`` are extra JSON fields (``choices``, ``hint``).
    """

    def __init__(self, code: str, message: str, **details: Any) -> None:
        if code not in CODES:
            raise ValueError(f"unknown tool error code {code!r}")
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details

    def to_json(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, **self.details}}


CODES = frozenset(
    {
        "no_such_file",  # the path does not exist
        "trace_format_unknown",  # a file kernelscope does not read
        "bad_input",  # a file of a known kind that cannot be read (damaged, empty)
        "bad_option",  # an option out of range or not one of its choices
        "no_such_metric",  # a metric the profile does not store
        "no_such_key",  # a key (line, module, op, kernel) the profile does not have
        "no_such_node",  # a tree node id out of range
        "no_timeline",  # the profile has no timeline (timeline needs one)
        "not_available",  # a tool this build of kernelscope does not have yet
        "internal",  # a bug in kernelscope: the message says what broke
    }
)
