"""The MCP server: every registered tool, over stdio, with structured results and structured errors.

Each tool's answer is one JSON object, sent both as ``structuredContent`` and as its text; a failed call
has ``isError`` set and ``{"error": {"code", "message", ...}}`` (codes in ``failure.CODES``), never a
traceback.
"""

from __future__ import annotations

import inspect
import json
import logging
import sys
import traceback
import typing
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent, ToolAnnotations

from ..errors import KernelscopeError
from ..trust.sources import SourceRoots
from ..version import __version__
from .failure import ToolFailure
from .registry import ToolSpec, tools
from .roots import set_source_roots

INSTRUCTIONS = """\
kernelscope answers where an ML program's time goes: source line -> nn.Module -> framework op -> kernel.
Every tool takes `path`: a .ksprof profile (kernelscope run writes one) or a trace (Kineto JSON, JAX
xplane.pb, Proton). Start with summary(path), then top(path, by='line'), then source(path, key=...) on a
row's key or tree(path, node=...) on a row's nodes. Answers are bounded: `truncated` says when rows were
left out; raise `limit` or `max_bytes` to see more. Errors are {"error": {"code", "message"}}."""

log = logging.getLogger("kernelscope.mcp")


def answer(spec: ToolSpec, kwargs: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """Call a tool: (its JSON answer, whether it is an error)."""
    try:
        return spec.fn(**kwargs), False
    except ToolFailure as exc:
        return exc.to_json(), True
    except KernelscopeError as exc:  # a bad regex or option the analysis itself refused
        return ToolFailure("bad_option", str(exc)).to_json(), True
    except Exception as exc:  # a bug: say what broke, keep the traceback for the server's log
        traceback.print_exc(file=sys.stderr)
        message = f"{spec.name} failed: {type(exc).__name__}: {exc} (a kernelscope bug; please report it)"
        return ToolFailure("internal", message).to_json(), True


def _as_mcp_tool(spec: ToolSpec) -> Any:
    """A function with ``spec.fn``'s parameters (their types and descriptions become the input schema)
    that returns the MCP result itself."""
    hints = typing.get_type_hints(spec.fn, include_extras=True)
    sig = inspect.signature(spec.fn)
    params = [p.replace(annotation=hints[p.name]) for p in sig.parameters.values()]

    def call(**kwargs: Any) -> CallToolResult:
        doc, is_error = answer(spec, kwargs)
        text = json.dumps(doc, separators=(",", ":"), allow_nan=False)
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=doc, is_error=is_error)

    call.__name__ = spec.name
    call.__doc__ = spec.description
    call.__signature__ = sig.replace(parameters=params, return_annotation=CallToolResult)  # type: ignore[attr-defined]
    return call


def build_server() -> MCPServer:
    server: MCPServer = MCPServer("kernelscope", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")
    read_only = ToolAnnotations(
        read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
    )
    for spec in tools():
        server.add_tool(_as_mcp_tool(spec), name=spec.name, description=spec.description, annotations=read_only)
    return server


def serve(roots: SourceRoots | None = None) -> None:
    """Serve on stdio; the ``source`` tool reads files under ``roots`` only (default: the working folder)."""
    if roots is not None:
        set_source_roots(roots)
    build_server().run("stdio")
