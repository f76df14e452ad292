"""Names made inert for the terminal: control characters are shown, never sent.

An op, kernel, file or metric name in a trace is someone else's data. ``aten::\\x1b[2J\\x1b]0;PWNED`` would
clear the screen and set the window title if it reached a terminal as is. ``visible`` turns every C0/C1
control character (newline and tab included: a name is one line), DEL and the bidirectional overrides
("Trojan Source") into a visible escape (``\\x1b``, ``\\n``, ``\\u202e``); other text is unchanged, and a
name without such characters is returned as the same object. HTML output escapes names its own way
(``render.report``); JSON escapes them by its grammar.
"""

from __future__ import annotations

import re

_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
# C0 controls, DEL, C1 controls, and the bidirectional embedding/override/isolate characters.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# The same, less newline and tab: for text kernelscope itself lays out over several lines.
_CONTROL_KEEP_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    ch = match.group()
    named = _NAMED.get(ch)
    if named is not None:
        return named
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with every control character written as a visible escape (one line, no raw control byte)."""
    return _CONTROL.sub(_escape, text) if _CONTROL.search(text) else text


def visible_keep_lines(text: str) -> str:
    """As ``visible``, but newlines and tabs stay (for a block of lines kernelscope composed itself)."""
    return _CONTROL_KEEP_LINES.sub(_escape, text) if _CONTROL_KEEP_LINES.search(text) else text
