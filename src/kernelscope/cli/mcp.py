"""``kernelscope mcp``: a read-only MCP server over stdio for coding agents (docs/agents.md)."""

from __future__ import annotations

import argparse
import sys

from ..errors import BadInputError
from .sources import add_source_root_argument, source_roots

_SDK_MODULES = {"mcp", "mcp_types", "pydantic", "anyio"}

EXAMPLES = """\
examples:
  kernelscope mcp                                   # started by an agent; speaks MCP on stdin/stdout
  claude mcp add kernelscope -- kernelscope mcp     # register it with an agent (docs/agents.md)

tools: summary, top, tree, source, findings, timeline, diff, ranks, history; each takes a path
(profile or trace) and named options; answers are bounded (limit, max_bytes, truncated).
"""


class McpCommand:
    name = "mcp"
    help = "serve profiles and traces to coding agents: a read-only MCP server on stdio"

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.epilog = EXAMPLES
        add_source_root_argument(parser)

    def run(self, args: argparse.Namespace) -> int:
        try:
            from ..mcp.server import serve
        except ModuleNotFoundError as exc:
            if exc.name is None or exc.name.split(".")[0] not in _SDK_MODULES:
                raise
            raise BadInputError(f"kernelscope mcp needs the MCP SDK ({exc}); pip install 'kernelscope[mcp]'") from None
        if sys.stdin.isatty():
            print("kernelscope mcp: serving MCP on stdin/stdout for an agent (Ctrl-C to stop)", file=sys.stderr)
        serve(source_roots(args))
        return 0


COMMAND = McpCommand()
