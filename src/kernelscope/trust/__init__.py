"""Trust boundaries: what kernelscope does with input other people wrote (docs/trust.md).

- ``sources``: which source files a reader may open (only regular text files under the program's roots);
- ``text``: names made inert for the terminal (control characters shown, never sent);
- ``limits``: size caps on archive members, decompressed streams and single strings; FIFOs and devices refused.
"""

from __future__ import annotations

from .sources import SourceRoots

__all__ = ["SourceRoots"]
